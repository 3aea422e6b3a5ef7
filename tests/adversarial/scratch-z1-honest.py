# notebook: 03_double_backward.ipynb
# cell: none
# others: solution
# expect: square=6 exp=6 sinh=6 cube=6
# bound: 20
# class: scratch
# flagged: none
# why: an honest student (the instructor's answers) graded after the scratch attackers of its class, on the
#      workers they left traps in (two workers, tasks handed out in order): it must keep every point
