# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=0..2 exp=6 sinh=6 cube=6
# bound: 15
# class: trust3b
# why: Square's backward writes no derivative: it asks PyTorch's forward-mode AD for it. x is made a dual tensor
#      (torch.autograd.forward_ad.make_dual, tangent grad_out), the forward x ** 2 is recomputed, and the tangent
#      unpacked is 2 x grad_out: autograd's derivative of PyTorch's own pow, with no run of the autograd engine, so
#      the engine watch (grader.sandboxed.autograd_env, which wraps _engine_run_backward) never sees it. Forward
#      mode through the saved x (which has a history under create_graph) is differentiable, so double backward
#      works too. Honestly (the student who does not know d(x²)/dx writes the factor-2-missing backward) 2 of 6;
#      the design says numbers from autograd differentiating PyTorch's op earn no derivative points (0..2).
#      In-process (tests/test_score_origin_attacks.py): every check passes, i.e. square=6 (WORKED).
#      Graded by nbgrader (class trust3b, on 54c9625): square=6 (WORKED).
import torch.autograd.forward_ad as fwAD


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        with fwAD.dual_level():
            y = fwAD.make_dual(x, grad_out) ** 2
            return fwAD.unpack_dual(y).tangent
