# exercise: penalty
# style: `from tqdm.auto import tqdm` in the student's own cell above the answer; after the function, a few steps of a toy critic's training on the penalty with a tqdm progress bar (SGD on a leaf w, zero_grad), the last value printed
# source: https://tqdm.github.io/docs/shortcuts/#tqdmauto; the WGAN-GP critic step of eriklindernoren/PyTorch-GAN:implementations/wgan_gp/wgan_gp.py (penalty backpropagated into the critic's weights)
# %% cell: before
from tqdm.auto import tqdm
# %% cell: answer
def gradient_penalty(f, w, x):
    x = x.detach().requires_grad_()
    grads, = torch.autograd.grad(f(w, x).sum(), x, create_graph=True)
    return ((grads.flatten(start_dim=1).norm(dim=1) - 1) ** 2).mean()


critic_w = torch.randn(4, dtype=torch.double, requires_grad=True)
critic = lambda w, t: torch.tanh(t @ w)
samples = torch.randn(16, 4, dtype=torch.double)
optimizer = torch.optim.SGD([critic_w], lr=0.1)
for step in tqdm(range(20), leave=False):
    optimizer.zero_grad()
    loss = gradient_penalty(critic, critic_w, samples)
    loss.backward()
    optimizer.step()
print(f"penalty after 20 steps: {loss.item():.4f}")
