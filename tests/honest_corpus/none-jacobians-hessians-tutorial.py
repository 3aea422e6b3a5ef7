# exercise: none
# style: the torch.func "Jacobians, Hessians, hvp, vhp, and more" tutorial's cells: functools.partial, `_ = torch.manual_seed(0)`, jacrev over one and several arguments, vmap over a batch, jacfwd, hessian, and its hvp / hvp_revrev checked against each other
# source: https://pytorch.org/tutorials/intermediate/jacobians_hessians.html (pytorch/tutorials:intermediate_source/jacobians_hessians.py)
# notebook: 04_modern_functions.ipynb
import torch
import torch.nn.functional as F
from functools import partial
_ = torch.manual_seed(0)

def predict(weight, bias, x):
    return F.linear(x, weight, bias).tanh()

D = 16
weight = torch.randn(D, D)
bias = torch.randn(D)
x = torch.randn(D)  # feature vector

from torch.func import jacrev, jacfwd, hessian, vmap, jvp, grad, vjp

jacobian = jacrev(predict, argnums=2)(weight, bias, x)
print(jacobian.shape)
ft_jac_weight, ft_jac_bias = jacrev(predict, argnums=(0, 1))(weight, bias, x)

batch_size = 64
Din = 31
Dout = 33

weight = torch.randn(Dout, Din)
print(f"weight shape = {weight.shape}")

bias = torch.randn(Dout)

x = torch.randn(batch_size, Din)

compute_batch_jacobian = vmap(jacrev(predict, argnums=2), in_dims=(None, None, 0))
batch_jacobian0 = compute_batch_jacobian(weight, bias, x)

def predict_with_output_summed(weight, bias, x):
    return predict(weight, bias, x).sum(0)

batch_jacobian1 = jacrev(predict_with_output_summed, argnums=2)(weight, bias, x).movedim(1, 0)
assert torch.allclose(batch_jacobian0, batch_jacobian1)

Din = 512
Dout = 32
weight = torch.randn(Dout, Din)
bias = torch.randn(Dout)
x = torch.randn(Din)

hess_api = hessian(predict, argnums=2)(weight, bias, x)
hess_fwdfwd = jacfwd(jacfwd(predict, argnums=2), argnums=2)(weight, bias, x)
hess_revrev = jacrev(jacrev(predict, argnums=2), argnums=2)(weight, bias, x)
assert torch.allclose(hess_api, hess_fwdfwd, atol=1e-4)

def hvp(f, primals, tangents):
    return jvp(grad(f), primals, tangents)[1]

def f(x):
    return x.sin().sum()

x = torch.randn(2048)
tangent = torch.randn(2048)

result = hvp(f, (x,), (tangent,))

def hvp_revrev(f, primals, tangents):
    _, vjp_fn = vjp(grad(f), *primals)
    return vjp_fn(*tangents)

result_hvp_revrev = hvp_revrev(f, (x,), (tangent,))
assert torch.allclose(result, result_hvp_revrev[0])
