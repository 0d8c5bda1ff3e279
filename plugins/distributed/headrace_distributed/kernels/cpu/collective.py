"""CPU kernels of the collective ops: MPI's buffer (uppercase) collectives on NumPy arrays.

Arrays travel as buffers, never pickled: a contiguous copy is made only when the input is not
contiguous already. A reduction whose X and Out are one persistable variable (a parameter, a
fused gradient buffer) runs in place (MPI_IN_PLACE) when the array is writable.
"""
import numpy as np

from headrace_distributed.comm import collective, communicator, mpi

DTYPES = ("float32", "float64", "int32", "int64")


def _buffer(x):
    return np.ascontiguousarray(x)


class _Collective:
    """Common state: the ring, the in-place decision; ``op_type`` names the op in messages."""
    op_type = "collective"

    def __init__(self, attrs, info=None):
        self.ring = attrs["ring_id"]
        self.inplace = info is not None and info.in_place("X", "Out")

    def comm(self):
        return communicator(self.ring, self.op_type)

    def what(self):
        return f"{self.op_type} (ring {self.ring})"


class AllReduce(_Collective):
    op_type, reduction = "c_allreduce_sum", "SUM"

    def __call__(self, x, cond=None):
        comm, MPI = self.comm(), mpi()
        x = _buffer(x)
        if self.inplace and x.flags.writeable:
            collective(comm.Iallreduce, MPI.IN_PLACE, x, op=getattr(MPI, self.reduction),
                       what=self.what(), comm=comm)
            return (x,)
        out = np.empty_like(x)
        collective(comm.Iallreduce, x, out, op=getattr(MPI, self.reduction), what=self.what(),
                   comm=comm)
        return (out,)


class AllReduceMax(AllReduce):
    op_type, reduction = "c_allreduce_max", "MAX"


class AllReduceMin(AllReduce):
    op_type, reduction = "c_allreduce_min", "MIN"


class AllReduceProd(AllReduce):
    op_type, reduction = "c_allreduce_prod", "PROD"


class Identity(_Collective):
    op_type = "c_identity"

    def __call__(self, x):
        return (x if self.inplace else np.array(x),)


class Broadcast(_Collective):
    op_type = "c_broadcast"

    def __init__(self, attrs, info=None):
        super().__init__(attrs, info)
        self.root = attrs["root"]

    def __call__(self, x):
        comm = self.comm()
        if self.root >= comm.size:
            raise ValueError(f"c_broadcast: root {self.root} is not a rank of ring {self.ring} "
                             f"(it has {comm.size} ranks)")
        buf = x if self.inplace and x.flags.writeable and x.flags.c_contiguous else np.array(x)
        collective(comm.Ibcast, buf, root=self.root, what=self.what(), comm=comm)
        return (buf,)


class _AlongAxis0(_Collective):
    """Collectives whose Out has X's shape with axis 0 grown or cut by the ring's size."""

    def __init__(self, attrs, info=None):
        super().__init__(attrs, info)
        self.nranks = attrs["nranks"]

    def prepare(self, x):
        """``(comm, contiguous X, Out)`` after the checks."""
        comm = self.comm()
        if self.nranks != comm.size:
            raise ValueError(f"{self.op_type}: attribute nranks={self.nranks} but ring "
                             f"{self.ring} has {comm.size} ranks")
        x = _buffer(x)
        if x.ndim == 0 or (not self.grow and x.shape[0] % comm.size):
            raise ValueError(f"{self.op_type}: X's first axis must "
                             f"{'exist' if self.grow else f'split evenly over {comm.size} ranks'}"
                             f", got shape {x.shape}")
        first = x.shape[0] * comm.size if self.grow else x.shape[0] // comm.size
        return comm, x, np.empty((first,) + x.shape[1:], x.dtype)


class AllGather(_AlongAxis0):
    op_type, grow = "c_allgather", True

    def __call__(self, x):
        comm, x, out = self.prepare(x)
        collective(comm.Iallgather, x, out, what=self.what(), comm=comm)
        return (out,)


class ReduceScatter(_AlongAxis0):
    op_type, grow = "c_reducescatter", False

    def __call__(self, x):
        comm, x, out = self.prepare(x)
        collective(comm.Ireduce_scatter_block, x, out, op=mpi().SUM, what=self.what(),
                   comm=comm)
        return (out,)


class Barrier(_Collective):
    op_type = "barrier"

    def __call__(self, x):
        comm = self.comm()
        collective(comm.Ibarrier, what=self.what(), comm=comm)
        return (x if self.inplace else np.array(x),)


KERNELS = [(k.op_type, k, DTYPES) for k in (
    AllReduce, AllReduceMax, AllReduceMin, AllReduceProd, Identity, Broadcast, AllGather,
    ReduceScatter, Barrier)]
