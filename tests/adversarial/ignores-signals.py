# notebook: 03_double_backward.ipynb
# cell: sinh
# others: solution
# expect: square=6 exp=6 sinh=0 cube=0
# bound: 35
# policy: off
# why: a loop that ignores SIGINT, SIGTERM, SIGHUP, SIGALRM and catches every exception: still stopped in time
import signal
import time

for _sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGALRM, signal.SIGUSR1, signal.SIGQUIT):
    signal.signal(_sig, signal.SIG_IGN)
while True:
    try:
        while True:
            time.sleep(0.01)
    except BaseException:
        pass
