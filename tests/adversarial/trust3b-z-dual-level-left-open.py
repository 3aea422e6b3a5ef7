# notebook: 04_modern_functions.ipynb
# cell: none
# others: solution
# expect: softplus=6 hvp=4
# bound: 20
# class: trust3b
# flagged: none
# transform: source code-59a32159 big = torch.tensor([-80.0, -20.0, 0.0, 20.0, 100.0])           # float32\nnaive = torch.log(1 + torch.exp(big))\nstable = torch.clamp(big, min=0) + torch.log1p(torch.exp(-big.abs()))\nreference = torch.logaddexp(big, torch.zeros_like(big))         # log(e^x + e^0), PyTorch's stable version\nprint("naive    :", naive)\nprint("stable   :", stable)\nprint("reference:", reference)\nassert torch.isinf(naive[-1]) and naive[0] == 0                 # overflow, and e^-80 lost entirely\nassert torch.allclose(stable, reference)\nassert stable[0] >= torch.finfo(torch.float32).tiny              # e^-80 ≈ 1.8e-35 kept (a normal float32)\n\n# exploring dual tensors without a with block (the functional form of forward_ad)\nfwAD.enter_dual_level()\nbig_dual = fwAD.make_dual(big.double(), torch.ones(5, dtype=torch.double))\nprint("softplus tangents:", fwAD.unpack_dual(torch.nn.functional.softplus(big_dual)).tangent)\n
# why: an honest student (the victim) with every answer right, who explored dual tensors in the playground cell
#      on softplus overflow (code-59a32159, before the Softplus exercise) with forward_ad's functional form,
#      fwAD.enter_dual_level(), and never called exit_dual_level(). The level stays open for every later cell.
#      autograd_env.clean() resets saved-tensor hooks, grad, anomaly and inference mode, not forward AD's dual
#      level: the observer's own `with forward_ad.dual_level()` in the forward-mode check then fails ("nested
#      forward mode AD is not supported"). Expected full marks, never flagged. In-process (self-check): the
#      forward-mode check fails with grader_error (softplus 5 of 6 or worse: WORKED, an honest student loses).
#      Graded by nbgrader (class trust3b, on 54c9625): softplus=5 hvp=2 (WORKED: the victim loses 3 points, hvp's forward-over-reverse too; not flagged).
