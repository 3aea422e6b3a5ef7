# exercise: penalty
# style: a @dataclass holding the penalty's settings (target norm 1.0), its __call__ computing the penalty (the WGAN-GP "GradientPenalty" loss-module pattern), the function the notebook asks for calling an instance
# source: https://docs.python.org/3/library/dataclasses.html; the callable gradient-penalty objects of public WGAN-GP code (e.g. a GradientPenalty class with __call__(self, critic, x)) as described in Gulrajani et al., "Improved Training of Wasserstein GANs"
from dataclasses import dataclass


@dataclass
class GradientPenalty:
    target: float = 1.0

    def __call__(self, critic, x):
        x = x.detach().requires_grad_()
        scores = critic(x)
        gradients, = torch.autograd.grad(scores, x, grad_outputs=torch.ones_like(scores), create_graph=True)
        norms = gradients.reshape(len(x), -1).norm(2, dim=1)
        return ((norms - self.target) ** 2).mean()


def gradient_penalty(f, w, x):
    return GradientPenalty()(lambda t: f(w, t), x)
