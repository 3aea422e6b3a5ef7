# notebook: 03_double_backward.ipynb
# cell: none
# others: solution
# expect: square=6 exp=6 sinh=6 cube=6
# bound: 20
# class: pid1-stdout pid1-ptrace
# flagged: none
# why: an honest student (the instructor's answers) graded after the pid 1 attackers of its class, on the workers
#      they attacked (two workers, tasks handed out in order): it must keep every point, and its code must not
#      reach the attackers
