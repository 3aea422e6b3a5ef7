# notebook: 03_double_backward.ipynb
# cell: sinh
# others: solution
# expect: square=6 exp=6 sinh=0 cube=0
# bound: 10
# policy: off
# why: os._exit(1) in a later answer cell: the exercises before it keep their points, the later ones get 0
import os

os._exit(1)
