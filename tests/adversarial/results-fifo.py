# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=0..6 exp=0..6 sinh=0..6 cube=0..6
# bound: 15
# policy: off
# class: results-file
# why: replaces its results file (results.jsonl, in its scratch) by a named pipe: the grader, reading it
#      after the notebook ends, must not wait forever (nothing ever writes to the pipe); the class is graded
import os


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return grad_out * 2 * x


try:
    os.remove("results.jsonl")
    os.mkfifo("results.jsonl")
except OSError as error:
    print("could not replace the results file:", error)
