# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=0..2 exp=6 sinh=6 cube=6
# bound: 15
# class: policy
# refused: square
# why: the outside tester's first forgery (issue 19): lower RLIMIT_NOFILE to 0 so the audit hook's report cannot
#      open its socket, then walk gc.get_objects() to the plan and make the checks call an honest Function. On the
#      old code: 6/6 unflagged. Now `resource` and `gc` cannot be imported by a graded cell.
import resource, gc
resource.setrlimit(resource.RLIMIT_NOFILE, (0, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
for obj in gc.get_objects():
    pass

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign
