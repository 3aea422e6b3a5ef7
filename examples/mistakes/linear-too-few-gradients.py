# exercise: linear
# mistake: backward returns two gradients although forward takes three inputs (bias included)
# expect: forward=pass first-order=wrong_number_of_gradients second-order=wrong_number_of_gradients structure=wrong_number_of_gradients
# caught-by: gradcheck
class LinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight)
        output = input @ weight.t()
        if bias is not None:
            output = output + bias
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, weight = ctx.saved_tensors
        return grad_output @ weight, grad_output.t() @ input
