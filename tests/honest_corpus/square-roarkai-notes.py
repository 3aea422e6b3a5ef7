# exercise: square
# style: a learner's annotated copy (Chinese comments, a banner comment, gradcheck printed); same Function
# source: https://github.com/roarkai/pytorch_notes (notebook "Double backward with custom functions", 例1)
## 例1：说明
#

import torch

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return grad_out * 2 * x

# finite differencing method会放大error，所以用双精度
x = torch.rand(3, 3, requires_grad=True, dtype=torch.double)
print(torch.autograd.gradcheck(Square.apply, x))

# 用gradcheck来验证second-order derivatives
print(torch.autograd.gradgradcheck(Square.apply, x))
