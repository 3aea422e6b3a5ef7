# exercise: penalty
# style: a WGAN-GP utils.py gradient_penalty (keyword-first torch.autograd.grad, view(shape[0], -1), norm(2, dim=1), torch.mean), its interpolation between real and fake removed: the exercise's x plays the interpolated images
# source: 0nEwEi/Test:WGANGP/utils.py (after aladdinpersson/Machine-Learning-Collection, ML/Pytorch/GANs/4. WGAN-GP)
def gradient_penalty(f, w, x):
    interpolated_images = x.detach()
    # RuntimeError: One of the differentiated Tensors does not require grad
    interpolated_images.requires_grad_(True) # if False, RuntimeError above occurs (line 19)

    # calculate critic scores
    mixed_scores = f(w, interpolated_images)

    gradient = torch.autograd.grad(
        inputs=interpolated_images,
        outputs=mixed_scores,
        grad_outputs=torch.ones_like(mixed_scores),
        create_graph=True,
        # retain_graph=True, # perhaps use this to reuse fake in Generator training
    )[0]

    gradient = gradient.view(gradient.shape[0], -1)
    gradient_norm = gradient.norm(2, dim=1)
    gradient_penalty = torch.mean((gradient_norm - 1) ** 2)

    return gradient_penalty
