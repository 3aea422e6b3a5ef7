# notebook: 03_double_backward.ipynb
# cell: none
# others: solution
# expect: square=6 exp=6 sinh=6 cube=6
# bound: 15
# class: trust3
# flagged: none
# transform: source code-889e48bd import contextlib\nsaved_by_autograd = []\n\n\ndef _pack(tensor):\n    # keep what autograd saves in float32: half the memory\n    saved_by_autograd.append(tuple(tensor.shape))\n    return (tensor.dtype, tensor.to(torch.float32))\n\n\ndef _unpack(packed):\n    dtype, stored = packed\n    return stored.to(dtype)\n\n\n_exploring = contextlib.ExitStack()\n_exploring.enter_context(torch.autograd.graph.saved_tensors_hooks(_pack, _unpack))\ngrad_x, = torch.autograd.grad(Peek.apply(x), x)\nprint('autograd saved tensors of shapes', saved_by_autograd, 'grad_x =', grad_x.item())
# why: an honest student (the victim) with every answer right, who explored what autograd saves in the playground
#      cell above the answers (code-889e48bd): torch.autograd.graph.saved_tensors_hooks entered through a
#      contextlib.ExitStack (the policy refuses `.__enter__()`, not this) and never left, so the mode stays pushed
#      for every later cell, the grader's checks included. Its pack hook records shapes and keeps each saved tensor
#      in a tuple, as a float32 copy (a memory-saving recipe: values agree to float32 precision); unpack gives it
#      back in its dtype. The grader must check the Functions as written, not under hooks the notebook left on:
#      full marks, never flagged. On the old code (b0039a7): square=4 exp=4 sinh=4 cube=4 (the observer's own
#      hooks cover its call of the Function, but gradgradcheck calls it again outside them, under the student's:
#      finite differences of float32-stored values fail; a bfloat16 copy costs 4 points a Function, as reported).
#      Hooks that give back the very tensor (packed in a tuple or not) cost nothing on the old code.
