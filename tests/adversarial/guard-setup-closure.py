# notebook: 01_autograd_basics.ipynb
# cell: vjp accumulate
# others: solution
# expect: vjp=0 accumulate=0 secondderiv=3
# bound: 10
# policy: off
# class: guard-reach
# why: vector_jacobian_product has the wrong sign (0 of 3) and mean_gradient_over_batches sums instead of
#      averaging (0 of 4). The probes of check_vjp_keeps_grad and of the three accumulate checks are built by
#      closures (grader.spec.function_probes._with_stale_grads, _batch_setup) kept in grader.spec.functions.CHECKS:
#      the guard keeps the table and each FunctionCheck's fields by identity, not the closures' cells or code. The
#      cell swaps the closure cell make_probes for one that negates v, and the code of the batch setups for one
#      whose loss_fn is divided by the number of batches: the sandbox's probes differ only where the judge does not
#      look (x, w, .grad before and the batches are the same), so the wrong answers give the right numbers.
#      Now grader.sandboxed.guarded.reached guards those closures. On the old code: vjp=1 accumulate=4.
# %% cell: vjp
import grader.spec.function_probes
import grader.spec.functions


def vector_jacobian_product(f, x, v):
    (vjp,) = torch.autograd.grad(f(x), x, grad_outputs=v)
    return -vjp  # wrong: the sign


_probes = grader.spec.function_probes


def _negated_v(sizes, seed):
    return [_probes._VjpProbe(p.desc, p.f, p.x, -p.v) for p in _probes._vjp_probes(sizes, seed)]


for _cell in grader.spec.functions.CHECKS["check_vjp_keeps_grad"].setup.__closure__:
    if _cell.cell_contents is _probes._vjp_probes:
        _cell.cell_contents = _negated_v
# %% cell: accumulate
def mean_gradient_over_batches(loss_fn, w, batches):
    w.grad = None
    for batch in batches:
        loss_fn(w, batch).backward()
    return w.grad.clone()  # wrong: the sum of the batches' gradients, not their mean


def _scaled_setup_factory(offset, stale_grad):
    # compiled here, run as the closure of grader.spec.function_probes._batch_setup (its globals: that module's)
    def setup(args):
        probes = _batch_probes(args["sizes"], args["n_batches"], args["seed"] + offset)
        n = len(probes[0].batches) if probes else 1
        probes = [_BatchProbe(p.desc, lambda w, b, f=p.loss_fn, n=n: f(w, b) / n, p.w, p.batches) for p in probes]
        if not stale_grad:
            return [(p, None) for p in probes]
        gen = torch.Generator().manual_seed(args["seed"] + 2000)
        return [(p, _rand(gen, *p.w.shape, low=3.0, high=6.0)) for p in probes]

    return setup


for _name in ("check_mean_gradient", "check_mean_gradient_stale", "check_mean_gradient_copy"):
    grader.spec.functions.CHECKS[_name].setup.__code__ = _scaled_setup_factory(0, False).__code__
