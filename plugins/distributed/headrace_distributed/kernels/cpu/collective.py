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
    """Common state: the ring, the op's type for messages, the in-place decision."""

    def __init__(self, attrs, info=None, op_type="collective"):
        self.ring = attrs["ring_id"]
        self.op_type = info.op_type if info is not None else op_type
        self.inplace = info is not None and info.in_place("X", "Out")

    def comm(self):
        return communicator(self.ring, self.op_type)

    def what(self):
        return f"{self.op_type} (ring {self.ring})"


class AllReduce(_Collective):
    reduction = "SUM"

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
    reduction = "MAX"


class AllReduceMin(AllReduce):
    reduction = "MIN"


class AllReduceProd(AllReduce):
    reduction = "PROD"


class Identity(_Collective):
    def __call__(self, x):
        return (x if self.inplace else np.array(x),)


class Broadcast(_Collective):
    def __init__(self, attrs, info=None):
        super().__init__(attrs, info, "c_broadcast")
        self.root = attrs["root"]

    def __call__(self, x):
        comm = self.comm()
        if self.root >= comm.size:
            raise ValueError(f"c_broadcast: root {self.root} is not a rank of ring {self.ring} "
                             f"(it has {comm.size} ranks)")
        buf = x if self.inplace and x.flags.writeable and x.flags.c_contiguous else np.array(x)
        collective(comm.Ibcast, buf, root=self.root, what=self.what(), comm=comm)
        return (buf,)


def _check_nranks(kernel, comm, nranks):
    if nranks != comm.size:
        raise ValueError(f"{kernel.op_type}: attribute nranks={nranks} but ring {kernel.ring} "
                         f"has {comm.size} ranks")


class AllGather(_Collective):
    def __init__(self, attrs, info=None):
        super().__init__(attrs, info, "c_allgather")
        self.nranks = attrs["nranks"]

    def __call__(self, x):
        comm = self.comm()
        _check_nranks(self, comm, self.nranks)
        x = _buffer(x)
        if x.ndim == 0:
            raise ValueError(f"c_allgather: X must have a first axis, got shape {x.shape}")
        out = np.empty((x.shape[0] * comm.size,) + x.shape[1:], x.dtype)
        collective(comm.Iallgather, x, out, what=self.what(), comm=comm)
        return (out,)


class ReduceScatter(_Collective):
    def __init__(self, attrs, info=None):
        super().__init__(attrs, info, "c_reducescatter")
        self.nranks = attrs["nranks"]

    def __call__(self, x):
        comm = self.comm()
        _check_nranks(self, comm, self.nranks)
        x = _buffer(x)
        if x.ndim == 0 or x.shape[0] % comm.size:
            raise ValueError(f"c_reducescatter: X's first axis must split evenly over "
                             f"{comm.size} ranks, got shape {x.shape}")
        out = np.empty((x.shape[0] // comm.size,) + x.shape[1:], x.dtype)
        collective(comm.Ireduce_scatter_block, x, out, op=mpi().SUM, what=self.what(),
                   comm=comm)
        return (out,)


class Barrier(_Collective):
    def __init__(self, attrs, info=None):
        super().__init__(attrs, info, "barrier")

    def __call__(self, x):
        comm = self.comm()
        collective(comm.Ibarrier, what=self.what(), comm=comm)
        return (x if self.inplace else np.array(x),)


def _maker(cls, op_type):
    def make(attrs, info=None):
        kernel = cls(attrs, info) if cls.__init__ is not _Collective.__init__ \
            else cls(attrs, info, op_type)
        return kernel
    return make


KERNELS = [
    ("c_allreduce_sum", _maker(AllReduce, "c_allreduce_sum"), DTYPES),
    ("c_allreduce_max", _maker(AllReduceMax, "c_allreduce_max"), DTYPES),
    ("c_allreduce_min", _maker(AllReduceMin, "c_allreduce_min"), DTYPES),
    ("c_allreduce_prod", _maker(AllReduceProd, "c_allreduce_prod"), DTYPES),
    ("c_identity", _maker(Identity, "c_identity"), DTYPES),
    ("c_broadcast", Broadcast, DTYPES),
    ("c_allgather", AllGather, DTYPES),
    ("c_reducescatter", ReduceScatter, DTYPES),
    ("barrier", Barrier, DTYPES),
]
