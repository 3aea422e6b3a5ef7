# exercise: none
# notebook: 04_modern_functions.ipynb
# style: the "Fundamentals of Autograd" tutorial's first lines (`%matplotlib inline`, matplotlib.pyplot, math), then softplus and its derivative plotted through the student's Softplus with the tutorial's linspace(0, 2π) grid
# source: https://pytorch.org/tutorials/beginner/introyt/autogradyt_tutorial.html ("%matplotlib inline", "import matplotlib.pyplot as plt", "import math", "a = torch.linspace(0., 2. * math.pi, steps=25, requires_grad=True)")
%matplotlib inline

import torch

import matplotlib.pyplot as plt
import matplotlib.ticker as ticker
import math

a = torch.linspace(-2. * math.pi, 2. * math.pi, steps=25, requires_grad=True)
b = Softplus.apply(a)
b.sum().backward()
plt.plot(a.detach(), b.detach(), label="softplus")
plt.plot(a.detach(), a.grad.detach(), label="derivative")
plt.gca().xaxis.set_major_locator(ticker.MultipleLocator(math.pi))
plt.legend()
plt.show()
