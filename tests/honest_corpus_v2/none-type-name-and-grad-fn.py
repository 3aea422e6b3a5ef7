# exercise: none
# notebook: 01_autograd_basics.ipynb
# style: printing type(x).__name__, type(y.grad_fn).__name__ and walking grad_fn.next_functions by hand, as the autograd tutorials do to show the graph
# source: https://pytorch.org/tutorials/beginner/introyt/autogradyt_tutorial.html ("print(d.grad_fn.next_functions[0][0].next_functions)") and https://pytorch.org/tutorials/beginner/blitz/autograd_tutorial.html
x = torch.ones(2, 2, requires_grad=True)
y = (x * 3).sin().sum()
print(type(x).__name__, type(y).__name__, type(y.grad_fn).__name__)
node = y.grad_fn
while node is not None:
    print(node.name())
    node = node.next_functions[0][0] if node.next_functions else None
