# exercise: none
# notebook: 04_modern_functions.ipynb
# style: a student's own setup cell (`import logging`, `from tqdm.auto import tqdm`, logging.basicConfig), then a short training loop of a softplus regression through the student's Softplus with a tqdm bar and logger.info every 10 steps
# source: https://docs.python.org/3/howto/logging.html and https://tqdm.github.io/docs/shortcuts/#tqdmauto; the training loop of https://pytorch.org/tutorials/beginner/pytorch_with_examples.html
# %% cell: before
import logging
from tqdm.auto import tqdm

logging.basicConfig(level=logging.INFO)
logger = logging.getLogger("train")
# %% cell: answer
torch.manual_seed(0)
xs = torch.linspace(-3, 3, 50)
ys = torch.log1p(torch.exp(2 * xs))
a = torch.zeros((), requires_grad=True)
optimizer = torch.optim.Adam([a], lr=0.1)
for step in tqdm(range(50)):
    optimizer.zero_grad()
    loss = ((Softplus.apply(a * xs) - ys) ** 2).mean()
    loss.backward()
    optimizer.step()
    if step % 10 == 0:
        logger.info("step %d loss %.4f", step, loss.item())
