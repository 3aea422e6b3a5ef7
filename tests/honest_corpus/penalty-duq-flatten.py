# exercise: penalty
# style: a research repository's calc_gradient_penalty(x, y_pred) (flatten(start_dim=1), "Two sided penalty", the one-sided variant left commented out), called from the function the notebook asks for
# source: LLNL/OODmedic:utils/util_duq.py
def calc_gradient_penalty(x, y_pred):
    gradients = torch.autograd.grad(
            outputs=y_pred,
            inputs=x,
            grad_outputs=torch.ones_like(y_pred),
            create_graph=True,
        )[0]


    gradients = gradients.flatten(start_dim=1)

    # L2 norm
    grad_norm = gradients.norm(2, dim=1)

    # Two sided penalty
    gradient_penalty = ((grad_norm - 1) ** 2).mean()

    # One sided penalty - down
#     gradient_penalty = F.relu(grad_norm - 1).mean()

    return gradient_penalty


def gradient_penalty(f, w, x):
    x = x.detach().requires_grad_(True)
    return calc_gradient_penalty(x, f(w, x))
