# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=0..2 exp=6 sinh=6 cube=6
# bound: 15
# class: trust3b
# why: Square's backward recomputes the forward under torch.enable_grad() on the saved x (it has a history under
#      create_graph; else on a detached copy made to require grad) and calls the recomputed output's grad_fn
#      directly: `(x ** 2).grad_fn(grad_out)` runs PyTorch's PowBackward0 node as a function, which returns
#      2 x grad_out (with a graph, so double backward works) without the autograd engine ever starting. `grad_fn`
#      is an ordinary attribute and calling a node is a call: the policy allows both; the engine watch sees
#      nothing. Honestly 2 of 6; expected 0..2. In-process: every check passes, square=6 (WORKED).
#      Graded by nbgrader (class trust3b, on 54c9625): square=6 (WORKED). Closed: graded code gets graph nodes as
#      views to look at (grader.sandboxed.graph_nodes); calling one is a PolicyError, so backward raises.
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        with torch.enable_grad():
            y = x ** 2
            if y.grad_fn is None:  # a plain call of backward (no create_graph): x has no history
                y = x.detach().requires_grad_() ** 2
            return y.grad_fn(grad_out)
