# exercise: secondderiv
# style: a public script's two torch.autograd.grad calls with a ones "weight" as grad_outputs, every keyword spelled out, prints kept
# source: wowotou1998/LP-BFGS-attack:auto_grade_test.py (also Garios2/Spectral_Acceleration:src/algos/pyhessian/grad_test.py)
def second_derivative(f, x):
    y = f(x)
    weight = torch.ones(y.size())
    print(weight.shape)
    dydx = torch.autograd.grad(outputs=y,
                               inputs=x,
                               grad_outputs=weight,
                               retain_graph=True,
                               create_graph=True,
                               only_inputs=True)
    """(x**2)' = 2*x """
    d2ydx2 = torch.autograd.grad(outputs=dydx[0],
                                 inputs=x,
                                 grad_outputs=weight,
                                 retain_graph=True,
                                 create_graph=True,
                                 only_inputs=True)
    return d2ydx2[0]
