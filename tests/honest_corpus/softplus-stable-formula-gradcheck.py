# exercise: softplus
# style: the overflow-free formula of stable logistic losses (max(x, 0) + log1p(exp(-|x|)), written with relu), the class followed by the forward-mode tutorial's gradcheck with check_forward_ad=True and a torch.func.jvp sanity check with asserts and an f-string print
# source: https://pytorch.org/tutorials/intermediate/forward_ad_usage.html ("It is important to use autograd.gradcheck ... check_forward_ad=True"); formula as in pytorch/pytorch:aten/src/ATen/native/Loss.cpp (binary_cross_entropy_with_logits: max_val + log(exp(-max_val) + exp(-input - max_val)))
class Softplus(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return torch.relu(x) + torch.log1p(torch.exp(-torch.abs(x)))

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.sigmoid(x)

    @staticmethod
    def jvp(ctx, x_t):
        (x,) = ctx.saved_tensors
        return x_t * torch.sigmoid(x)


primal = torch.randn(10, 10, dtype=torch.double, requires_grad=True)
assert torch.autograd.gradcheck(Softplus.apply, (primal,), check_forward_ad=True)
_, tangent_out = torch.func.jvp(Softplus.apply, (primal.detach(),), (torch.ones(10, 10, dtype=torch.double),))
assert torch.allclose(tangent_out, torch.sigmoid(primal.detach()))
print(f"max |softplus(1000) - 1000| = {(Softplus.apply(torch.tensor([1000.0])) - 1000).abs().max().item():.3g}")
