# exercise: square
# mistake: Square.apply is replaced by PyTorch's own op: no custom Function at all
# expect: forward=not_custom_function first-order=not_custom_function second-order=not_custom_function structure=not_custom_function
# caught-by: neither
class Square:
    apply = staticmethod(torch.square)
