# exercise: none
# notebook: 04_modern_functions.ipynb
# style: a small dual-number class with __add__, __mul__ (and their reflected forms) to see forward-mode AD by hand before torch's dual tensors; compared with fwAD on the same polynomial
# source: https://en.wikipedia.org/wiki/Automatic_differentiation#Automatic_differentiation_using_dual_numbers (the dual-number class of countless forward-mode tutorials) and https://pytorch.org/tutorials/intermediate/forward_ad_usage.html
class Dual:
    def __init__(self, value, tangent=0.0):
        self.value = value
        self.tangent = tangent

    def __add__(self, other):
        other = other if isinstance(other, Dual) else Dual(other)
        return Dual(self.value + other.value, self.tangent + other.tangent)

    __radd__ = __add__

    def __mul__(self, other):
        other = other if isinstance(other, Dual) else Dual(other)
        return Dual(self.value * other.value, self.value * other.tangent + self.tangent * other.value)

    __rmul__ = __mul__

    def __repr__(self):
        return f"Dual({self.value}, {self.tangent})"


def poly(t):
    return 3 * t * t + 2 * t + 1


print(poly(Dual(2.0, 1.0)))  # value 17, derivative 14
with fwAD.dual_level():
    out = poly(fwAD.make_dual(torch.tensor(2.0), torch.tensor(1.0)))
    print(fwAD.unpack_dual(out).tangent)
