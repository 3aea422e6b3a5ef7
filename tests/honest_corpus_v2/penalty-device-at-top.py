# exercise: penalty
# style: `device = "cuda" if torch.cuda.is_available() else "cpu"` at the top of the cell and a device= argument threaded through (the Aladdin Persson WGAN-GP utils.py signature gradient_penalty(critic, real, fake, device="cpu")), torch.ones_like grad_outputs, gradient.view(shape[0], -1)
# source: aladdinpersson/Machine-Learning-Collection:ML/Pytorch/GANs/4. WGAN-GP/utils.py (def gradient_penalty(critic, real, fake, device="cpu"), "gradient_norm = gradient.norm(2, dim=1)"), its interpolation removed
device = "cuda" if torch.cuda.is_available() else "cpu"


def gradient_penalty(f, w, x, device=device):
    interpolated_images = x.detach().to(device).requires_grad_(True)
    mixed_scores = f(w, interpolated_images)
    gradient = torch.autograd.grad(
        inputs=interpolated_images,
        outputs=mixed_scores,
        grad_outputs=torch.ones_like(mixed_scores),
        create_graph=True,
        retain_graph=True,
    )[0]
    gradient = gradient.view(gradient.shape[0], -1)
    gradient_norm = gradient.norm(2, dim=1)
    return torch.mean((gradient_norm - 1) ** 2)
