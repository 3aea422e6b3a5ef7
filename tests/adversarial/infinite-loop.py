# notebook: 03_double_backward.ipynb
# cell: exp
# others: solution
# expect: square=6 exp=0 sinh=0 cube=0
# bound: 35
# why: an endless loop in an answer cell: stopped at the notebook's time limit; what came before keeps its points
while True:
    pass
