# exercise: cube
# style: `import time` in the student's own cell above the answer; after the classes, the NumPy helper timed against torch's own x ** 3 (time.perf_counter), the notebook-3 Cube / CubeBackward unchanged
# source: https://docs.python.org/3/library/time.html#time.perf_counter; https://pytorch.org/tutorials/intermediate/custom_function_double_backward_tutorial.html ("When Backward is not Tracked")
# %% cell: before
import time
# %% cell: answer
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return cube_forward(x)

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return CubeBackward.apply(grad_out, x)


class CubeBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, grad_out, x):
        ctx.save_for_backward(x, grad_out)
        return cube_backward(grad_out, x)

    @staticmethod
    def backward(ctx, grad_out):
        x, sav_grad_out = ctx.saved_tensors
        return cube_backward_backward_grad_out(grad_out, x), cube_backward_backward(grad_out, sav_grad_out, x)


x = torch.randn(1000, dtype=torch.double)
t0 = time.perf_counter()
cube_forward(x)
t1 = time.perf_counter()
x ** 3
print(f"numpy helper: {1e6 * (t1 - t0):.0f} µs, torch: {1e6 * (time.perf_counter() - t1):.0f} µs")
