# exercise: none
# style: the "Fundamentals of Autograd" tutorial's first cells: matplotlib (pyplot and ticker), math, linspace with requires_grad, prints of tensors and of grad_fn chains, backward of a sum, plots of the values and of a.grad
# source: https://pytorch.org/tutorials/beginner/introyt/autogradyt_tutorial.html (pytorch/tutorials:beginner_source/introyt/autogradyt_tutorial.py)
# notebook: 01_autograd_basics.ipynb
import torch

import matplotlib.pyplot as plt
import matplotlib.ticker as ticker
import math

a = torch.linspace(0., 2. * math.pi, steps=25, requires_grad=True)
print(a)

b = torch.sin(a)
plt.plot(a.detach(), b.detach())

print(b)

c = 2 * b
print(c)

d = c + 1
print(d)

out = d.sum()
print(out)

print('d:')
print(d.grad_fn)
print(d.grad_fn.next_functions)
print(d.grad_fn.next_functions[0][0].next_functions)
print(d.grad_fn.next_functions[0][0].next_functions[0][0].next_functions)
print(d.grad_fn.next_functions[0][0].next_functions[0][0].next_functions[0][0].next_functions)
print('\nc:')
print(c.grad_fn)
print('\nb:')
print(b.grad_fn)
print('\na:')
print(a.grad_fn)

out.backward()
print(a.grad)
plt.plot(a.detach(), a.grad.detach())
