# notebook: 03_double_backward.ipynb
# cell: square
# others: solution
# expect: square=2 exp=6 sinh=6 cube=6
# bound: 15
# policy: off
# class: forgeries
# why: a wrong backward (the sign); the answer cell starts a thread that watches the child's results
#      descriptor (fd 3, opened read-write) while the test cells are observed, and right after each observation
#      of Square it appends a forged copy with the gradients' sign flipped and gradcheck/gradgradcheck "ok"
#      (the trusted side keeps the last line of an index). No frames, gc or ctypes: only the descriptor.
#      On the old code: square=6 (full marks).
import json
import os
import threading
import time


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return -grad_out * 2 * x  # wrong: the sign


def _flip(value):
    if isinstance(value, dict) and "__tensor__" in value:
        return {**value, "data": [-d for d in value["data"]]}
    if isinstance(value, list):
        return [_flip(v) for v in value]
    return value


def _fixed(obs):
    obs = dict(obs)
    if obs.get("forward", {}).get("node") != "Square":
        return obs
    for key in ("vjp", "first", "second"):
        if isinstance(obs.get(key), dict) and "grads" in obs[key]:
            obs[key] = {**obs[key], "grads": _flip(obs[key]["grads"])}
    for key in ("gradcheck", "gradgradcheck"):
        if key in obs:
            obs[key] = {"ok": True}
    return obs


def _forge(line):
    entry = json.loads(line)
    if entry.get("event") != "observed" or entry.get("again"):  # not our own forged lines
        return None
    calls = entry.get("calls", [])
    if not any(o.get("forward", {}).get("node") == "Square"
               for c in calls for o in c.get("observations", []) if isinstance(o, dict)):
        return None
    entry["again"] = True
    entry["calls"] = [{**c, "observations": [_fixed(o) for o in c["observations"]]} if "observations" in c else c
                      for c in calls]
    return json.dumps(entry) + "\n"


def _watch(fd=3):
    seen = 0
    while True:
        try:
            data = os.pread(fd, 1 << 24, seen)
        except OSError:
            return
        complete = data[:data.rfind(b"\n") + 1]
        for line in complete.decode(errors="replace").splitlines():
            forged = _forge(line) if line.startswith('{"event": "observed"') else None
            if forged:
                os.write(fd, forged.encode())
        seen += len(complete)
        time.sleep(0.002)


threading.Thread(target=_watch, daemon=True).start()
