# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=6 exp=6 sinh=6 cube=6
# bound: 20
# class: channel policy
# flagged: none
# why: an honest student who asks torch for two threads before big matrix products (the instructor's answer to
#      square, then torch.set_num_threads(2) and 512x512 matmuls). OpenMP started a thread, the seccomp filter
#      refused it and the process died: 0 of 24 on the old code. Torch and OpenMP are now pinned to the one thread
#      the sandbox allows: full marks, and nothing flagged (no audit event exists for thread starts anyway).
# <solution>
torch.set_num_threads(2)
_a = torch.rand(512, 512)
for _ in range(5):
    _b = _a @ _a
