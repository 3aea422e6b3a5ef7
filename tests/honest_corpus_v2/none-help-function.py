# exercise: none
# notebook: 02_custom_function.ipynb
# style: `help(torch.autograd.Function)` and help on ctx's methods, the first thing a student types to read the docstrings in a notebook
# source: https://docs.python.org/3/library/functions.html#help and https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function (the docstring help() prints)
help(torch.autograd.Function)
help(torch.autograd.function.FunctionCtx.save_for_backward)
