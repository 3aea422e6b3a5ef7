# exercise: penalty
# style: PyTorch-GAN's wgan_gp.py as a student pastes it: `cuda = True if torch.cuda.is_available() else False` at the top, compute_gradient_penalty's autograd.grad with every keyword (grad_outputs a ones tensor, create_graph, retain_graph, only_inputs), view(size(0), -1), norm(2, dim=1); its interpolation removed (x is the point), called from the function the notebook asks for
# source: eriklindernoren/PyTorch-GAN:implementations/wgan_gp/wgan_gp.py (cuda = True if torch.cuda.is_available() else False; def compute_gradient_penalty(D, real_samples, fake_samples))
cuda = True if torch.cuda.is_available() else False


def compute_gradient_penalty(D, interpolates):
    """Calculates the gradient penalty loss for WGAN GP"""
    d_interpolates = D(interpolates)
    fake = torch.ones(d_interpolates.shape, dtype=interpolates.dtype, requires_grad=False)
    # Get gradient w.r.t. interpolates
    gradients = torch.autograd.grad(
        outputs=d_interpolates,
        inputs=interpolates,
        grad_outputs=fake,
        create_graph=True,
        retain_graph=True,
        only_inputs=True,
    )[0]
    gradients = gradients.view(gradients.size(0), -1)
    gradient_penalty = ((gradients.norm(2, dim=1) - 1) ** 2).mean()
    return gradient_penalty


def gradient_penalty(f, w, x):
    interpolates = x.detach().requires_grad_(True)
    return compute_gradient_penalty(lambda t: f(w, t), interpolates)
