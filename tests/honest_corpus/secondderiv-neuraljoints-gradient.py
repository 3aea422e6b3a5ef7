# exercise: secondderiv
# style: a repository's `gradient(outputs, inputs, create_graph=True, retain_graph=True)` helper (ones as grad_outputs) applied twice
# source: Egoago/neuraljoints:neuraljoints/neural/autograd.py
def gradient(outputs, inputs, create_graph=True, retain_graph=True):
    ones = torch.ones_like(outputs, requires_grad=False, device=outputs.device)
    return torch.autograd.grad(outputs, inputs, grad_outputs=ones, create_graph=create_graph, retain_graph=retain_graph)[0]


def second_derivative(f, x):
    return gradient(gradient(f(x), x), x)
