# exercise: penalty
# style: a WGAN-GP Trainer class's private _gradient_penalty method (torch.autograd.grad imported as torch_grad, gradients.view(batch_size, -1), the sqrt of the sum of squares plus 1e-12 "because of the square root", self.losses bookkeeping); the interpolation and gp_weight dropped (x is the point, the exercise has no weight), Variable and .data[0] replaced by a leaf and .item()
# source: EmilienDupont/wgan-gp:training.py (Trainer._gradient_penalty)
from torch.autograd import grad as torch_grad


class Trainer():
    def __init__(self, critic, weights):
        self.D = critic
        self.w = weights
        self.losses = {'GP': [], 'gradient_norm': []}

    def _gradient_penalty(self, interpolated):
        batch_size = interpolated.size()[0]
        interpolated = interpolated.detach().requires_grad_(True)

        # Calculate probability of interpolated examples
        prob_interpolated = self.D(self.w, interpolated)

        # Calculate gradients of probabilities with respect to examples
        gradients = torch_grad(outputs=prob_interpolated, inputs=interpolated,
                               grad_outputs=torch.ones(prob_interpolated.size(), dtype=prob_interpolated.dtype),
                               create_graph=True, retain_graph=True)[0]

        # Gradients have shape (batch_size, num_channels, img_width, img_height),
        # so flatten to easily take norm per example in batch
        gradients = gradients.view(batch_size, -1)
        self.losses['gradient_norm'].append(gradients.norm(2, dim=1).mean().item())

        # Derivatives of the gradient close to 0 can cause problems because of
        # the square root, so manually calculate norm and add epsilon
        gradients_norm = torch.sqrt(torch.sum(gradients ** 2, dim=1) + 1e-12)

        # Return gradient penalty
        return ((gradients_norm - 1) ** 2).mean()


def gradient_penalty(f, w, x):
    return Trainer(f, w)._gradient_penalty(x)
