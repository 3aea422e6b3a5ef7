# exercise: vjp
# style: a public script's torch.autograd.grad with every keyword spelled out (outputs=, inputs=, grad_outputs=, retain_graph=, only_inputs=) and a print of the result, wrapped in the function the notebook asks for
# source: wowotou1998/LP-BFGS-attack:auto_grade_test.py
def vector_jacobian_product(f, x, v):
    y = f(x)
    dydx = torch.autograd.grad(outputs=y,
                               inputs=x,
                               grad_outputs=v,
                               retain_graph=True,
                               create_graph=False,
                               only_inputs=True)
    print(dydx[0].shape)
    return dydx[0]
