"""The seeds' workflow: the driver builds the program once, serializes main and startup
ProgramDescs and sends them to the workers, which parse and run them without the user's
model-building code.

The driver (rank 0) calls :func:`launch_program` with the transpiled programs (built with
``DistributedOptimizer(..., check_programs=False)``: the workers build nothing to compare with;
the parsed programs are compared on every rank instead) and the global batches; every other
rank calls :func:`serve_program` (or runs ``python -m headrace_distributed.worker``) before
building anything. Programs travel as bytes (MPI Bcast
of a uint8 buffer); each global batch is cut into contiguous row blocks, one per rank, sent
with Scatterv (rank r gets rows ``[r*B, (r+1)*B)`` as in the SPMD style with a sharded reader).
"""
import json

import numpy as np

import headrace as hr

from .comm import DistributedError, wait, world
from .failure import check_programs

__all__ = ["launch_program", "serve_program", "serve_forever", "stop_workers", "DRIVER"]

DRIVER = 0


def _bcast_bytes(data, what):
    """The driver's ``data`` on every rank: its length, then the bytes (two Ibcasts, each
    waited for with the collective deadline)."""
    comm = world()
    n = np.array([len(data) if comm.rank == DRIVER else 0], np.int64)
    wait(comm.Ibcast(n, root=DRIVER), f"launch_program: {what} size", comm)
    buf = np.frombuffer(data, np.uint8).copy() if comm.rank == DRIVER \
        else np.empty(int(n[0]), np.uint8)
    wait(comm.Ibcast(buf, root=DRIVER), f"launch_program: {what}", comm)
    return buf.tobytes()


def _bcast_json(value, what):
    return json.loads(_bcast_bytes(json.dumps(value).encode() if world().rank == DRIVER
                                   else b"", what))


def _counts(rows, size):
    base, extra = divmod(rows, size)
    return [base + (1 if r < extra else 0) for r in range(size)]


def _scatter_feed(feed):
    """Driver: the global feed dict; others: None. Returns this rank's rows of each array."""
    comm = world()
    meta = None
    if comm.rank == DRIVER and feed is not None:
        arrays = {k: np.ascontiguousarray(v) for k, v in feed.items()}
        meta = [(k, a.dtype.str, list(a.shape)) for k, a in arrays.items()]
    meta = _bcast_json(meta, "feed names, dtypes and shapes")
    if meta is None:
        return None
    local = {}
    for name, dtype, shape in meta:
        row = int(np.prod(shape[1:], dtype=np.int64))
        counts = _counts(shape[0], comm.size)
        out = np.empty((counts[comm.rank],) + tuple(shape[1:]), np.dtype(dtype))
        send = None
        if comm.rank == DRIVER:
            sizes = [c * row for c in counts]
            send = [arrays[name], (sizes, [int(d) for d in np.cumsum([0] + sizes[:-1])])]
        wait(comm.Iscatterv(send, out, root=DRIVER), f"launch_program: feed '{name}'", comm)
        local[name] = out
    return local


def _run(main, startup, fetch_names, feeds, place, scope):
    check_programs(main, startup)
    exe = hr.Executor(place or hr.CPUPlace())
    run_kw = {} if scope is None else {"scope": scope}
    exe.run(startup, **run_kw)
    fetched = []
    while True:
        feed = _scatter_feed(next(feeds, None))
        if feed is None:
            return exe, fetched
        fetched.append(exe.run(main, feed=feed, fetch_list=fetch_names, **run_kw))


def launch_program(main, startup, batches, fetch_list=(), place=None, scope=None):
    """Driver: send ``main``/``startup`` to every rank, then run one step per global batch
    (``batches``: an iterable of feed dicts) on all ranks. Returns ``(executor, fetched)``,
    ``fetched`` the driver's fetch values per step."""
    comm = world()
    if comm.rank != DRIVER:
        raise DistributedError(f"launch_program runs on the driver (rank {DRIVER}); rank "
                               f"{comm.rank} must call serve_program()")
    names = [v if isinstance(v, str) else v.name for v in fetch_list]
    _bcast_bytes(main.serialize_to_string(), "main program")
    _bcast_bytes(startup.serialize_to_string(), "startup program")
    _bcast_json(names, "fetch names")
    return _run(main, startup, names, iter(batches), place, scope)


def serve_program(place=None, scope=None):
    """Worker: receive the driver's programs, parse them and run the steps it sends. Returns
    ``(executor, fetched)`` when the driver has no more batches, None when the driver called
    :func:`stop_workers` instead of sending a program."""
    comm = world()
    if comm.rank == DRIVER:
        raise DistributedError(f"rank {DRIVER} is the driver: it calls launch_program")
    data = _bcast_bytes(b"", "main program")
    if not data:
        return None
    main = hr.Program.parse_from_string(data)
    startup = hr.Program.parse_from_string(_bcast_bytes(b"", "startup program"))
    names = _bcast_json(None, "fetch names")
    return _run(main, startup, names, iter(()), place, scope)


def stop_workers():
    """Driver: tell workers in :func:`serve_forever` that no program follows (an empty main
    program), so that they exit."""
    if world().rank != DRIVER:
        raise DistributedError(f"stop_workers runs on the driver (rank {DRIVER})")
    _bcast_bytes(b"", "main program")


def serve_forever(place=None):
    """Worker: serve one program after another, each in a fresh scope, until the driver calls
    :func:`stop_workers`; returns how many programs ran."""
    served = 0
    while serve_program(place, hr.Scope()) is not None:
        served += 1
    return served
