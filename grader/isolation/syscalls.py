"""The seccomp policy of the sandbox: the system calls student code is refused, and why.

Built with libseccomp (through ``pyseccomp``, a ctypes binding of the system's ``libseccomp2``) and handed
to bubblewrap as compiled BPF (``bwrap --seccomp FD``), so it applies to everything inside the sandbox:
the grading worker, each notebook's process and whatever they start. A refused call fails with EPERM (or
ENOSYS where C libraries fall back to an older call); nothing is killed, so a notebook that tries one just
sees an error.

What is refused, in three groups:
- reaching another process: ``ptrace``, ``process_vm_readv``/``writev``, ``pidfd_getfd``, ``kcmp`` ... (a
  notebook must not read or drive the worker that answers the trusted side, nor another notebook);
- threads: ``clone`` with ``CLONE_THREAD`` (and ``clone3``, which seccomp cannot inspect). A notebook's
  process then has exactly one thread, so nothing runs beside the grader's observer while it observes;
  processes (``fork``, ``subprocess``) still work;
- the kernel's bigger attack surface, which no answer needs: new namespaces and mounts, BPF, perf, io_uring,
  userfaultfd, keyrings, modules, kexec, reboot, swap, clocks, personality changes, POSIX message queues
  (they would outlive the notebook; System V IPC objects, which also do, are removed by the worker after each
  notebook instead).

Threads are refused, not flagged: CPython 3.11 raises no audit event when a thread starts, so a thread attempt
is seen only as the error (or, in C++ libraries, the abort) the refused ``clone`` causes. OpenMP and torch are
pinned to one thread in the sandbox (``OMP_THREAD_LIMIT=1``, torch's setters made harmless by the worker), so
an honest ``torch.set_num_threads(2)`` never gets that far.
"""

from __future__ import annotations

import errno
import os
import tempfile
from functools import lru_cache

CLONE_THREAD = 0x00010000

# syscall -> why a notebook may not make it (the reason is documentation; the call just fails with EPERM)
REFUSED: dict[str, str] = {
    "ptrace": "reading or driving another process (the worker, another notebook)",
    "process_vm_readv": "reading another process's memory",
    "process_vm_writev": "writing another process's memory",
    "pidfd_getfd": "taking another process's descriptors",
    "pidfd_open": "handles on other processes",
    "kcmp": "comparing other processes' kernel objects",
    "perf_event_open": "profiling other processes, side channels",
    "bpf": "loading kernel programs",
    "userfaultfd": "stalling the kernel on page faults (exploit primitive)",
    "io_uring_setup": "asynchronous I/O that bypasses this filter",
    "io_uring_enter": "asynchronous I/O that bypasses this filter",
    "io_uring_register": "asynchronous I/O that bypasses this filter",
    "keyctl": "kernel keyrings", "add_key": "kernel keyrings", "request_key": "kernel keyrings",
    "mount": "changing the sandbox's mounts", "umount2": "changing the sandbox's mounts",
    "pivot_root": "changing the sandbox's root", "chroot": "changing the sandbox's root",
    "move_mount": "changing the sandbox's mounts", "open_tree": "changing the sandbox's mounts",
    "fsopen": "changing the sandbox's mounts", "fsmount": "changing the sandbox's mounts",
    "fsconfig": "changing the sandbox's mounts", "fspick": "changing the sandbox's mounts",
    "mount_setattr": "changing the sandbox's mounts",
    "unshare": "new namespaces", "setns": "entering other namespaces",
    "init_module": "kernel modules", "finit_module": "kernel modules", "delete_module": "kernel modules",
    "kexec_load": "replacing the kernel", "kexec_file_load": "replacing the kernel", "reboot": "rebooting",
    "swapon": "swap", "swapoff": "swap", "acct": "process accounting", "syslog": "the kernel log",
    "settimeofday": "the clock", "clock_settime": "the clock", "clock_adjtime": "the clock", "adjtimex": "the clock",
    "personality": "execution domains (ASLR off)", "quotactl": "disk quotas",
    "name_to_handle_at": "opening files by handle", "open_by_handle_at": "opening files by handle",
    "mq_open": "POSIX message queues (they outlive the notebook, in no folder its worker empties)",
    "mq_unlink": "POSIX message queues", "mq_timedsend": "POSIX message queues",
    "mq_timedreceive": "POSIX message queues", "mq_notify": "POSIX message queues",
    "mq_getsetattr": "POSIX message queues",
    "lookup_dcookie": "kernel internals", "vhangup": "terminals", "iopl": "hardware ports", "ioperm": "hardware ports",
}


class SeccompUnavailable(RuntimeError):
    pass


@lru_cache(maxsize=1)
def compiled() -> bytes:
    """The policy as BPF bytes for ``bwrap --seccomp``; raises SeccompUnavailable with the reason."""
    try:
        import pyseccomp as sc
    except (ImportError, OSError) as exc:  # pyseccomp loads libseccomp.so.2 with ctypes on import
        raise SeccompUnavailable(f"libseccomp is not usable ({exc}): run `make install` "
                                 "(Debian package libseccomp2, Python package pyseccomp)") from None
    rules = sc.SyscallFilter(defaction=sc.ALLOW)
    for name in REFUSED:
        try:
            rules.add_rule(sc.ERRNO(errno.EPERM), name)
        except (RuntimeError, ValueError, OSError):
            pass  # a call this kernel or libseccomp does not know cannot be made anyway
    rules.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, CLONE_THREAD, CLONE_THREAD))
    rules.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")  # glibc then falls back to clone, which is inspected
    with tempfile.TemporaryFile() as out:
        rules.export_bpf(out)
        out.seek(0)
        return out.read()


def descriptor() -> int:
    """A fresh readable descriptor holding the compiled policy (bwrap reads it to the end, then closes it)."""
    program = compiled()
    fd = os.memfd_create("grader-seccomp", os.MFD_CLOEXEC)
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
