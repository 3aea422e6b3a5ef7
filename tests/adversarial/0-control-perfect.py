# notebook: all
# cell: none
# others: solution
# expect: vjp=3 accumulate=4 secondderiv=3 linear=6 square=6 exp=6 sinh=6 cube=6 softplus=6 sortvalues=4 hvp=4 penalty=3
# bound: 30
# class: main results-file controls forgeries pid1-stdout pid1-ptrace scratch policy
# flagged: none
# why: the honest control: the instructor's answers get every point. Named to be graded first, while the pool of
#      sandboxed workers has just started; it is in every class.
