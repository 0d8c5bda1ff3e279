"""The job as one rank sees it: init(), rank(), world_size()."""
from collections import namedtuple

from .comm import world
from .failure import install_excepthook

__all__ = ["Env", "init", "rank", "world_size"]


class Env(namedtuple("Env", "rank world_size")):
    """This process's rank and the number of ranks (from the MPI environment)."""
    __slots__ = ()


def init(abort_on_error=True):
    """Start MPI (once) and return ``Env(rank, world_size)``.

    ``abort_on_error``: an exception that escapes the script on one rank prints the rank and
    its traceback, then aborts the whole job (MPI_Abort), so the other ranks stop at once
    instead of waiting in their next collective."""
    comm = world()
    if abort_on_error:
        install_excepthook()
    return Env(comm.rank, comm.size)


def rank():
    return world().rank


def world_size():
    return world().size
