"""Each rank its own part of every epoch, and checkpoints shared by all ranks."""
import numpy as np

from headrace import io

from .comm import world, wait

__all__ = ["shard_indices", "shard_reader", "save_checkpoint", "load_checkpoint"]


def shard_indices(n, epoch=0, seed=0, shuffle=True, rank=None, world_size=None):
    """This rank's sample indices for ``epoch``: one permutation of ``range(n)`` (the same on
    every rank: seeded by ``seed`` and ``epoch``), cut into ``world_size`` equal parts (the
    remainder, fewer than world_size samples, is dropped so every rank takes the same number
    of steps). Rank r's part is ``perm[r * k:(r + 1) * k]``: the parts are disjoint."""
    rank = world().rank if rank is None else rank
    world_size = world().size if world_size is None else world_size
    order = np.random.default_rng([seed, epoch]).permutation(n) if shuffle else np.arange(n)
    k = n // world_size
    return order[rank * k:(rank + 1) * k]


def shard_reader(reader, rank=None, world_size=None):
    """A Fluid reader (a callable returning an iterator of samples or batches) that yields
    every ``world_size``-th item starting at ``rank``; a trailing partial round is dropped so
    that all ranks see the same number of items."""
    rank = world().rank if rank is None else rank
    world_size = world().size if world_size is None else world_size

    def sharded():
        round_ = []
        for item in reader():
            round_.append(item)
            if len(round_) == world_size:
                yield round_[rank]
                round_ = []
    return sharded


def _barrier(what):
    comm = world()
    wait(comm.Ibarrier(), what, comm)


def save_checkpoint(executor, dirname, main_program=None, filename=None, scope=None):
    """Rank 0 writes the persistables with headrace.io's all-or-nothing save; every rank
    returns once it is complete (the parameters are the same on every rank)."""
    if world().rank == 0:
        io.save_persistables(executor, dirname, main_program, filename, scope=scope)
    _barrier(f"save_checkpoint({dirname!r})")


def load_checkpoint(executor, dirname, main_program=None, filename=None, scope=None):
    """Every rank loads the checkpoint rank 0 wrote (a shared file system)."""
    _barrier(f"load_checkpoint({dirname!r})")
    io.load_persistables(executor, dirname, main_program, filename, scope=scope)
