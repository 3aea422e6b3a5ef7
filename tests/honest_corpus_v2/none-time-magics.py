# exercise: none
# notebook: 03_double_backward.ipynb
# style: IPython's %time and %timeit magics on the notebook's Square against torch's own x ** 2 (a student comparing speeds), -n/-r given to keep it short
# source: https://ipython.readthedocs.io/en/stable/interactive/magics.html (%time, %timeit -n<N> -r<R>) as pytorch/tutorials' notebooks use them (e.g. "%timeit" cells of the torch.compile and benchmarking recipes)
x = torch.randn(1000, dtype=torch.double, requires_grad=True)
%time y = Square.apply(x)
%timeit -n 10 -r 3 Square.apply(x)
%timeit -n 10 -r 3 x ** 2
