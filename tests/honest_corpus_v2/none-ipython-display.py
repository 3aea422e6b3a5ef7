# exercise: none
# notebook: 04_modern_functions.ipynb
# style: IPython.display's display and Markdown to show a small table of the Hessian-vector products, as notebooks present results
# source: https://ipython.readthedocs.io/en/stable/api/generated/IPython.display.html (from IPython.display import display, Markdown)
from IPython.display import display, Markdown

p = torch.tensor([0.5, -1.0, 2.0], dtype=torch.double)
d = torch.tensor([1.0, 0.0, 0.0], dtype=torch.double)
f = lambda t: (t ** 3).sum()
rows = "\n".join(f"| {i} | {h:.3f} |" for i, h in enumerate(hvp(f, p, d).tolist()))
display(Markdown("| i | (H v)_i |\n|---|---|\n" + rows))
