# exercise: exp
# style: `import time` in the student's own cell above the answer; after the class the answer times Exp.apply against torch.exp over 100 calls (time.perf_counter) and prints the ratio
# source: https://docs.python.org/3/library/time.html#time.perf_counter; the tutorial's Exp (https://pytorch.org/tutorials/intermediate/custom_function_double_backward_tutorial.html)
# %% cell: before
import time
# %% cell: answer
class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        result = torch.exp(x)
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_out):
        result, = ctx.saved_tensors
        return grad_out * result


x = torch.randn(100, dtype=torch.double, requires_grad=True)
t0 = time.perf_counter()
for _ in range(100):
    Exp.apply(x)
t1 = time.perf_counter()
for _ in range(100):
    torch.exp(x)
t2 = time.perf_counter()
print(f"Exp.apply is {(t1 - t0) / (t2 - t1):.1f}x slower than torch.exp")
