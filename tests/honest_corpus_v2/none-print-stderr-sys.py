# exercise: none
# notebook: 03_double_backward.ipynb
# style: an exploration that reports to stderr (`import sys`, print(..., file=sys.stderr)) when gradgradcheck fails, as scripts do, and prints the Python and torch versions (sys.version)
# source: https://docs.python.org/3/library/sys.html#sys.stderr and #sys.version; PyTorch's bug-report template asks for them (pytorch/pytorch:torch/utils/collect_env.py prints "Python version")
import sys

print("Python", sys.version.split()[0], "torch", torch.__version__)
x = torch.randn(3, dtype=torch.double, requires_grad=True)
if not torch.autograd.gradgradcheck(Square.apply, (x,), raise_exception=False):
    print("gradgradcheck failed for Square", file=sys.stderr)
