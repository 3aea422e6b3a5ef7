# notebook: all
# cell: vjp linear square
# others: solution
# expect: vjp=3 accumulate=4 secondderiv=3 linear=6 square=6 exp=6 sinh=6 cube=6 softplus=6 sortvalues=4 hvp=4 penalty=3
# bound: 30
# why: an honest student (the instructor's answers) whose notebooks contain the text planted-module-victim-4d2 (and that are graded after plant-module's),
#      which the module planted by plant-module looks for: another student's code must not touch its grading
# %% cell: vjp
# <solution>
# planted-module-victim-4d2
# %% cell: linear
# <solution>
# planted-module-victim-4d2
# %% cell: square
# <solution>
# planted-module-victim-4d2
