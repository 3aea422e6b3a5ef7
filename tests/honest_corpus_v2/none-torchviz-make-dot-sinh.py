# exercise: none
# notebook: 03_double_backward.ipynb
# style: torchviz.make_dot of the double-backward graph of the student's sinh (params given as a dict, show_attrs/show_saved as its README shows), the graph the cell's last expression
# source: https://github.com/szagoruyko/pytorchviz (README: "make_dot(y.mean(), params=dict(model.named_parameters()), show_attrs=True, show_saved=True)")
import torchviz

x = torch.randn(3, dtype=torch.double, requires_grad=True)
out = sinh(x)
grad_x, = torch.autograd.grad(out.sum(), x, create_graph=True)
torchviz.make_dot((grad_x, x, out), params={"grad_x": grad_x, "x": x, "out": out}, show_attrs=True, show_saved=True)
