# notebook: 02_custom_function.ipynb
# cell: linear
# others: solution
# expect: linear=0..2
# bound: 20
# class: trust3b
# why: LinearFunction's backward writes none of the three gradient formulas: it takes the full Jacobians of
#      torch.nn.functional.linear with torch.func.jacfwd (forward mode: no engine run, so the engine watch sees
#      nothing) and contracts them with grad_output (a vjp read off the Jacobian), honouring needs_input_grad and a
#      missing bias. The catalogued mistakes of this exercise (a transposed grad_weight, a bias not summed ...) earn
#      forward + structure at most; a derivative PyTorch computed should earn no derivative points (0..2).
#      In-process: every check passes, linear=6 (WORKED).
#      Graded by nbgrader (class trust3b, on 54c9625): linear=6 (WORKED).
import torch.nn.functional as F


class LinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight)
        ctx.has_bias = bias is not None
        output = input.mm(weight.t())
        if bias is not None:
            output = output + bias
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, weight = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        bias = torch.zeros(weight.shape[0], dtype=weight.dtype)
        j_in, j_w, j_b = torch.func.jacfwd(F.linear, argnums=(0, 1, 2))(input, weight, bias)
        if ctx.needs_input_grad[0]:
            grad_input = torch.tensordot(grad_output, j_in, dims=2)
        if ctx.needs_input_grad[1]:
            grad_weight = torch.tensordot(grad_output, j_w, dims=2)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_bias = torch.tensordot(grad_output, j_b, dims=2)
        return grad_input, grad_weight, grad_bias
