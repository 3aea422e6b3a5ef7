# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=6 exp=6 sinh=6 cube=6
# bound: 20
# policy: off
# why: a right answer that floods stdout and stderr (hundreds of MB) and fills its scratch with a big file:
#      bounded, and it costs no points
import os
import sys


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        print("backward!" * 1000)
        print("backward!" * 1000, file=sys.stderr)
        return grad_out * 2 * x


_line = "flood " * 20_000 + "\n"
for _ in range(2_000):
    sys.stdout.write(_line)
    sys.stderr.write(_line)
for _ in range(500):
    os.write(1, _line.encode())
    os.write(2, _line.encode())
try:
    with open("flood.bin", "wb") as _f:
        for _ in range(1_000):
            _f.write(b"\0" * 2**20)
except OSError as _error:
    print("the disk said:", _error)
