"""What happens when ranks fail or disagree.

A rank that raises: ``init`` installs an excepthook that prints ``rank R of N failed`` with the
traceback, then calls MPI_Abort, which makes mpiexec stop every rank (``headrace launch`` then
names the rank). A rank that dies: mpiexec notices and stops the others. A rank that hangs:
the others' collectives time out (``comm.wait``), each reports its timeout and waits a grace
period (``HEADRACE_TIMEOUT_GRACE`` seconds, default 3) before aborting, so that every waiting
rank has reported: ``headrace launch`` names the members that did not (the hung ones).
Programs that differ between ranks (different op sequences) would pair the wrong collectives:
:func:`check_programs` compares fingerprints when the rewrite is applied and names the first
differing op.
"""
import hashlib
import os
import sys
import time
import traceback

import numpy as np

from .comm import CollectiveTimeoutError, DistributedError, wait, world

__all__ = ["ProgramMismatchError", "install_excepthook", "program_fingerprint",
           "check_programs", "FAILED_MARK"]

FAILED_MARK = "headrace.distributed: rank"


class ProgramMismatchError(DistributedError):
    """The ranks run different programs."""


def _report_and_abort(exc_type, exc, tb):
    comm = world()
    text = "".join(traceback.format_exception(exc_type, exc, tb))
    sys.stderr.write(f"{FAILED_MARK} {comm.rank} of {comm.size} failed:\n{text}")
    sys.stderr.flush()
    sys.stdout.flush()
    if isinstance(exc, CollectiveTimeoutError):
        # The other waiting ranks time out about now too: let them report before the abort
        # stops them, so that the ranks which did not report are the ones that hung.
        time.sleep(float(os.environ.get("HEADRACE_TIMEOUT_GRACE", "3")))
    comm.Abort(1)


def install_excepthook():
    """Abort the job when an exception escapes on this rank (idempotent)."""
    if sys.excepthook is not _report_and_abort:
        sys.excepthook = _report_and_abort


def _op_lines(program):
    lines = []
    for b in range(program.num_blocks):
        block = program.block(b)
        for op in block.ops:
            ins = sorted((k, tuple(v)) for k, v in op.inputs.items())
            outs = sorted((k, tuple(v)) for k, v in op.outputs.items())
            shapes = []
            for _, names in ins:
                for n in names:
                    var = block._find_var_recursive(n) if n else None
                    shapes.append(tuple(var.shape) if var is not None and var.shape else ())
            lines.append(f"{b}:{op.type} {ins} -> {outs} {shapes}")
    return lines


def program_fingerprint(program):
    """sha256 of the op sequence (types, variables, input shapes) of every block."""
    return hashlib.sha256("\n".join(_op_lines(program)).encode()).hexdigest()


def check_programs(main, startup):
    """Collective: every rank's main and startup programs must have the same fingerprint."""
    comm = world()
    mine = (_op_lines(main), _op_lines(startup))
    digest = np.frombuffer(hashlib.sha256(repr(mine).encode()).digest(), np.uint8)
    digests = np.empty((comm.size, digest.size), np.uint8)
    wait(comm.Iallgather(digest, digests), "check_programs (program fingerprints)", comm)
    bad = [r for r in range(comm.size) if (digests[r] != digests[0]).any()]
    if not bad:
        return
    # Only now exchange the op lists (pickled text), to say where the first bad rank differs.
    lists = comm.allgather(mine)
    r = bad[0]
    for which, name in ((0, "main"), (1, "startup")):
        a, b = lists[0][which], lists[r][which]
        for i in range(max(len(a), len(b))):
            x = a[i] if i < len(a) else "(none)"
            y = b[i] if i < len(b) else "(none)"
            if x != y:
                raise ProgramMismatchError(
                    f"ranks {bad} run a different {name} program than rank 0: first difference "
                    f"at op #{i} (block:type inputs -> outputs shapes):\n  rank 0: {x}\n  "
                    f"rank {r}: {y}\nevery rank must build the same program (same code, same "
                    f"arguments) for data-parallel training")
    raise ProgramMismatchError(f"ranks {bad} run a different program than rank 0")
