# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=6 exp=6 sinh=6 cube=6
# bound: 15
# policy: off
# after: no-leftover-processes advleftover9q
# why: a right answer that leaves processes running: a shell loop in its own session ignoring SIGTERM, a
#      double-forked daemon, a plain fork; no process of it may survive grading
import os
import subprocess
import sys

MARKER = "advleftover9q"


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return grad_out * 2 * x


subprocess.Popen(["/bin/sh", "-c", "trap '' TERM INT HUP; while :; do sleep 1; done", MARKER], start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

_daemon = ("import signal, time\n"
           "for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP): signal.signal(s, signal.SIG_IGN)\n"
           "while True: time.sleep(1)\n")
if os.fork() == 0:  # double fork: the daemon's parent exits at once
    try:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", _daemon, MARKER])
    finally:
        os._exit(0)

if os.fork() == 0:  # a plain fork, named after the marker
    try:
        with open("/proc/self/comm", "w") as f:
            f.write(MARKER)
    except OSError:
        pass
    while True:
        try:
            os.pause()
        except BaseException:
            pass
