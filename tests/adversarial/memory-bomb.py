# notebook: 03_double_backward.ipynb
# cell: cube
# others: solution
# expect: square=6 exp=6 sinh=6 cube=0
# bound: 30
# why: a memory bomb (touched pages, kept alive) in the last answer cell: bounded by the sandbox's limits, no
#      trouble for the machine; the exercises before it keep their points
_hog = []
while True:
    _hog.append(bytearray(b"x" * (64 * 2**20)))
