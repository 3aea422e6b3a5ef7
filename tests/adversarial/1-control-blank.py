# notebook: all
# cell: none
# others: stub
# expect: vjp=0 accumulate=0 secondderiv=0 linear=0 square=0 exp=0 sinh=0 cube=0 softplus=0 sortvalues=0 hvp=0 penalty=0
# bound: 30
# why: the honest control: the untouched notebooks get nothing, and grading does not break on them
