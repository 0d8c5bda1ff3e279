"""MPI as the collective ops see it: communicators by ring id, waits with a deadline.

mpi4py is imported on first use only, so the plugin's ops list, programs rewrite and serialize
on a machine without MPI; running a collective there is a :class:`DistributedError` saying what
to install. Ring 0 is ``MPI.COMM_WORLD`` (Paddle's default ``ring_id``); :func:`new_ring` adds
communicators over subsets of the ranks.

Every collective is started nonblocking and polled until a deadline
(``HEADRACE_COLLECTIVE_TIMEOUT`` seconds, default 300): a rank whose peer hangs, or never
reaches the same collective, raises :class:`CollectiveTimeoutError` instead of waiting forever
(``headrace_distributed.failure`` then aborts the job, naming the rank).
"""
import os
import time

from headrace.errors import HeadraceError

__all__ = ["INSTALL_HINT", "DistributedError", "CollectiveTimeoutError", "mpi", "world",
           "communicator", "new_ring", "rings", "collective_timeout", "wait", "collective",
           "STATS"]

INSTALL_HINT = "pip install headrace[distributed]"
TIMEOUT_ENV = "HEADRACE_COLLECTIVE_TIMEOUT"
DEFAULT_TIMEOUT = 300.0


class DistributedError(HeadraceError):
    """Distributed training cannot go on: MPI missing, an unknown ring, a failed rank."""


class CollectiveTimeoutError(DistributedError):
    """A collective did not complete before its deadline (a peer hung, died or diverged)."""


_MPI = None
_rings = {}


def mpi():
    """The ``mpi4py.MPI`` module (initializing MPI on first call)."""
    global _MPI
    if _MPI is None:
        try:
            from mpi4py import MPI
        except ImportError as e:
            raise DistributedError(
                f"distributed training needs mpi4py and an MPI library, which are not "
                f"installed here ({e}); install them with: {INSTALL_HINT}") from None
        _MPI = MPI
    return _MPI


def world():
    """``MPI.COMM_WORLD``: every rank of the job (ring 0)."""
    return mpi().COMM_WORLD


def communicator(ring_id, op_type=None):
    """The communicator of ``ring_id`` (0: the world)."""
    if ring_id == 0:
        return world()
    comm = _rings.get(ring_id)
    if comm is None:
        where = f"{op_type}: " if op_type else ""
        raise DistributedError(
            f"{where}ring_id {ring_id} names no communicator; known rings: "
            f"{sorted({0, *_rings})} (create one with headrace_distributed.new_ring(ranks))")
    return comm


def rings():
    """The ring ids known on this rank."""
    return sorted({0, *_rings})


def new_ring(ranks, ring_id=None):
    """Make a communicator over ``ranks`` (world ranks) and return its ring id.

    Collective over the world: every rank calls it with the same arguments (ranks outside
    ``ranks`` get the id too, but may not use it)."""
    comm_world = world()
    ranks = sorted(int(r) for r in ranks)
    if not ranks or ranks[0] < 0 or ranks[-1] >= comm_world.size or len(set(ranks)) != len(ranks):
        raise DistributedError(f"new_ring: ranks {ranks} must be distinct world ranks in "
                               f"[0, {comm_world.size})")
    ring_id = max(rings()) + 1 if ring_id is None else int(ring_id)
    if ring_id in rings():
        raise DistributedError(f"new_ring: ring_id {ring_id} is taken (known: {rings()})")
    color = 0 if comm_world.rank in ranks else mpi().UNDEFINED
    comm = comm_world.Split(color, key=comm_world.rank)
    _rings[ring_id] = comm if comm != mpi().COMM_NULL else _NotMember(ring_id, ranks)
    return ring_id


class _NotMember:
    """The ring of a rank outside it: any use is an error naming the ring's members."""

    def __init__(self, ring_id, ranks):
        self.ring_id, self.ranks = ring_id, ranks

    def __getattr__(self, name):
        raise DistributedError(f"ring_id {self.ring_id} spans ranks {self.ranks}; rank "
                               f"{world().rank} is not one of them")


def collective_timeout():
    """Seconds a collective may wait for its peers (``HEADRACE_COLLECTIVE_TIMEOUT``)."""
    text = os.environ.get(TIMEOUT_ENV)
    if not text:
        return DEFAULT_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        raise DistributedError(f"{TIMEOUT_ENV}={text!r} is not a number of seconds") from None
    if not value > 0:
        raise DistributedError(f"{TIMEOUT_ENV}={text!r} must be > 0 seconds")
    return value


def _members(comm):
    """The world ranks of ``comm``'s members, in its rank order."""
    MPI = mpi()
    return list(MPI.Group.Translate_ranks(comm.Get_group(), list(range(comm.size)),
                                          world().Get_group()))


def wait(request, what, comm):
    """Wait for ``request`` until the deadline; ``what`` names the collective for the error.

    Spins on ``Test`` first (a step's collectives are short), then sleeps between tests so a
    rank blocked on a slow peer leaves the core to it."""
    if request.Test():
        return
    deadline = time.monotonic() + collective_timeout()
    spins = 0
    while not request.Test():
        spins += 1
        if spins > 200:
            if time.monotonic() > deadline:
                raise CollectiveTimeoutError(
                    f"{what}: rank {world().rank} waited {collective_timeout():g} s for the "
                    f"other {comm.size - 1} rank(s) of its communicator (world ranks "
                    f"{_members(comm)}) in its collective #{STATS.started}; one of them died, "
                    f"hung or runs a different program ({TIMEOUT_ENV} sets the limit)")
            time.sleep(0.0002)


class _Stats:
    """Time the collective ops' kernels spent in MPI on this rank (start to completion, the
    wait for slower peers included): what bench_distributed.py reports as communication."""

    def __init__(self):
        self.started = 0      # collectives begun on this rank (numbers them in errors)
        self.calls, self.seconds = 0, 0.0

    def reset(self):
        self.calls, self.seconds = 0, 0.0


STATS = _Stats()


def collective(start, *args, what, comm, **kwargs):
    """``start(*args, **kwargs)`` (a nonblocking MPI call) then :func:`wait` for it, timed."""
    t0 = time.perf_counter()
    STATS.started += 1
    wait(start(*args, **kwargs), what, comm)
    STATS.calls += 1
    STATS.seconds += time.perf_counter() - t0
