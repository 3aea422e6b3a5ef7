# exercise: vjp
# style: the student's own cell above the answer sets up logging (`import logging`, basicConfig, a module logger) as the logging HOWTO shows; the answer logs the shapes at DEBUG level
# source: https://docs.python.org/3/howto/logging.html#logging-basic-tutorial (logging.basicConfig, logger = logging.getLogger(__name__))
# %% cell: before
import logging

logging.basicConfig(level=logging.INFO)
logger = logging.getLogger(__name__)
# %% cell: answer
def vector_jacobian_product(f, x, v):
    out = f(x)
    logger.debug("vjp: x %s, f(x) %s, v %s", tuple(x.shape), tuple(out.shape), tuple(v.shape))
    (vjp,) = torch.autograd.grad(out, x, grad_outputs=v)
    return vjp
