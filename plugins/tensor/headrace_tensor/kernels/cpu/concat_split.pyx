# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""concat and split along one axis, as byte copies that serve every dtype.

Seen from the axis, a C-contiguous array is ``outer`` rows (the product of the dims before the
axis) of contiguous bytes; each input of concat contributes one run of bytes to each output
row, and each piece of split takes one run from each input row. So both are a loop of memcpy
over rows, whatever the rank or dtype. split returns new arrays rather than views: its pieces
are separate variables that may be updated in place on their own.

concat_grad is a split of Out@GRAD into the pieces the inputs X filled (their sizes read from
X at run time); split's gradient is a concat op. split's piece sizes: kernels/host/concat_split.py
(shared with the CUDA kernel, cached per shape).
"""
cimport numpy as cnp
import numpy as np
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.string cimport memcpy
from headrace.kernels.common cimport dtype_name, empty, shape_of, typenum
from ._common cimport as_array, norm_axis, one_int, ints_of_list

from ..host.concat_split import split_sizes

cnp.import_array()

ALL_DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
              "float64", "complex64", "complex128")


cdef Py_ssize_t _prod(object dims):
    cdef Py_ssize_t n = 1
    for d in dims:
        n *= <Py_ssize_t>d
    return n


cdef void _gather(char* out, const char** srcs, const Py_ssize_t* runs, Py_ssize_t n,
                  Py_ssize_t outer) noexcept nogil:
    """Row by row, append each source's run: concat."""
    cdef Py_ssize_t o, i
    for o in range(outer):
        for i in range(n):
            memcpy(out, srcs[i] + o * runs[i], runs[i])
            out += runs[i]


cdef void _scatter(const char* x, char** dsts, const Py_ssize_t* runs, Py_ssize_t n,
                   Py_ssize_t outer) noexcept nogil:
    """Row by row, hand each destination its run: split (and concat_grad). A NULL destination
    is skipped (a gradient nobody wants)."""
    cdef Py_ssize_t o, i
    for o in range(outer):
        for i in range(n):
            if dsts[i] != NULL:
                memcpy(dsts[i] + o * runs[i], x, runs[i])
            x += runs[i]


cdef list scatter(cnp.ndarray a, tuple shape, int ax, object sizes, list wanted, str op):
    """The pieces of ``a`` (contiguous, dims ``shape``) along ``ax`` with the given sizes, as
    new arrays; None for a piece whose ``wanted`` entry is false."""
    cdef Py_ssize_t n = len(sizes), i
    outs = [empty(shape[:ax] + (s,) + shape[ax + 1:], cnp.PyArray_TYPE(a)) if w else None
            for s, w in zip(sizes, wanted)]
    cdef Py_ssize_t outer = _prod(shape[:ax])
    cdef Py_ssize_t row = _prod(shape[ax + 1:]) * cnp.PyArray_ITEMSIZE(a)
    if cnp.PyArray_SIZE(a) == 0 or n == 0:
        return outs
    cdef char** dsts = <char**>PyMem_Malloc(n * sizeof(char*))
    cdef Py_ssize_t* runs = <Py_ssize_t*>PyMem_Malloc(n * sizeof(Py_ssize_t))
    if dsts == NULL or runs == NULL:
        PyMem_Free(dsts)
        PyMem_Free(runs)
        raise MemoryError(f"{op}: no memory for the output table")
    try:
        for i in range(n):
            dsts[i] = NULL if outs[i] is None else <char*>cnp.PyArray_DATA(<cnp.ndarray>outs[i])
            runs[i] = <Py_ssize_t>sizes[i] * row
        with nogil:
            _scatter(<const char*>cnp.PyArray_DATA(a), dsts, runs, n, outer)
    finally:
        PyMem_Free(dsts)
        PyMem_Free(runs)
    return outs


cdef class Concat:
    cdef int axis

    def __init__(self, dict attrs, info=None):
        self.axis = attrs["axis"]

    def __call__(self, xs, axis_tensor=None):
        if not isinstance(xs, list) or not xs:
            raise ValueError("concat: X must be a non-empty list of tensors")
        arrays = [as_array(x, "concat", f"X[{i}]") for i, x in enumerate(xs)]
        cdef cnp.ndarray first = arrays[0], a
        cdef tuple fshape = shape_of(first)
        cdef int rank = len(fshape), t = typenum(first)
        if rank == 0:
            raise ValueError("concat: X[0] is 0-D; concat needs at least one dim")
        axis = one_int(axis_tensor, "concat", "AxisTensor") if axis_tensor is not None \
            else self.axis
        cdef int ax = norm_axis(axis, rank, "concat")
        cdef Py_ssize_t total = 0, n = len(arrays), i
        for i in range(n):
            a = arrays[i]
            s = shape_of(a)
            if typenum(a) != t:
                raise TypeError(f"concat: X[{i}] is {dtype_name(a)} but X[0] is "
                                f"{dtype_name(first)}")
            if len(s) != rank or s[:ax] != fshape[:ax] or s[ax + 1:] != fshape[ax + 1:]:
                raise ValueError(f"concat: X[{i}] has shape {list(s)}, which differs from X[0]'s "
                                 f"{list(fshape)} outside axis {ax}")
            total += s[ax]
        cdef tuple out_shape = fshape[:ax] + (total,) + fshape[ax + 1:]
        cdef cnp.ndarray out = empty(out_shape, cnp.PyArray_TYPE(first))
        cdef Py_ssize_t outer = _prod(fshape[:ax])
        cdef Py_ssize_t row = _prod(fshape[ax + 1:]) * cnp.PyArray_ITEMSIZE(first)
        if cnp.PyArray_SIZE(out) == 0:
            return (out,)
        cdef const char** srcs = <const char**>PyMem_Malloc(n * sizeof(char*))
        cdef Py_ssize_t* runs = <Py_ssize_t*>PyMem_Malloc(n * sizeof(Py_ssize_t))
        if srcs == NULL or runs == NULL:
            PyMem_Free(srcs)
            PyMem_Free(runs)
            raise MemoryError("concat: no memory for the input table")
        try:
            for i in range(n):
                a = arrays[i]
                srcs[i] = <const char*>cnp.PyArray_DATA(a)
                runs[i] = cnp.PyArray_DIMS(a)[ax] * row
            with nogil:
                _gather(<char*>cnp.PyArray_DATA(out), srcs, runs, n, outer)
        finally:
            PyMem_Free(srcs)
            PyMem_Free(runs)
        return (out,)


cdef class Split:
    cdef int axis, num
    cdef tuple sections
    cdef object n_out  # the number of Out variables (None when called without an op)

    def __init__(self, dict attrs, info=None):
        self.axis = attrs["axis"]
        self.num = attrs["num"]
        self.sections = tuple([int(s) for s in attrs["sections"]])
        if (self.num > 0) == bool(self.sections) or self.num < 0:
            raise ValueError(f"split: give exactly one of num (> 0) and sections; got "
                             f"num={self.num}, sections={list(self.sections)}")
        self.n_out = info.n_outputs("Out") if info is not None else None

    def __call__(self, x, axis_tensor=None, sections_list=None):
        cdef cnp.ndarray a = as_array(x, "split", "X")
        cdef tuple shape = shape_of(a)
        cdef int rank = len(shape)
        if rank == 0:
            raise ValueError("split: X is 0-D; split needs at least one dim")
        axis = one_int(axis_tensor, "split", "AxisTensor") if axis_tensor is not None \
            else self.axis
        cdef int ax = norm_axis(axis, rank, "split")
        sections = self.sections
        if sections_list:
            sections = tuple(ints_of_list(sections_list, "split", "SectionsTensorList"))
        sizes = split_sizes(self.num, shape[ax], sections)
        cdef Py_ssize_t n = len(sizes)
        if self.n_out is not None and n != self.n_out:
            raise ValueError(f"split: {n} pieces for {self.n_out} output variables")
        return (scatter(a, shape, ax, sizes, [True] * n, "split"),)


GRAD_DTYPES = ("float32", "float64")


cdef class ConcatGrad:
    """concat_grad: (X, AxisTensor, Out@GRAD) -> (X@GRAD,). X@GRAD[i] = the slice of Out@GRAD
    along axis that X[i] filled; X is read for its shapes only. Entries of X@GRAD nobody
    wants (``info.wanted``) are not computed (None)."""
    cdef int axis
    cdef object wanted  # per X: whether its gradient is wanted (None without an info)

    def __init__(self, dict attrs, info=None):
        self.axis = attrs["axis"]
        self.wanted = info.wanted("X@GRAD") if info is not None else None

    def __call__(self, xs, axis_tensor, dout):
        if not isinstance(xs, list) or not xs:
            raise ValueError("concat_grad: X must be a non-empty list of tensors")
        cdef cnp.ndarray g = as_array(dout, "concat_grad", "Out@GRAD")
        if dtype_name(g) not in GRAD_DTYPES:
            raise TypeError(f"concat_grad: Out@GRAD has dtype {dtype_name(g)}; supported: "
                            f"{', '.join(GRAD_DTYPES)}")
        cdef tuple gshape = shape_of(g)
        cdef int rank = len(gshape)
        if rank == 0:
            raise ValueError("concat_grad: Out@GRAD is 0-D; concat needs at least one dim")
        axis = one_int(axis_tensor, "concat_grad", "AxisTensor") if axis_tensor is not None \
            else self.axis
        cdef int ax = norm_axis(axis, rank, "concat_grad")
        cdef Py_ssize_t n = len(xs), i, total = 0
        wanted = [True] * n if self.wanted is None else self.wanted
        if self.wanted is not None and len(wanted) not in (0, n):
            raise ValueError(f"concat_grad: {len(wanted)} X@GRAD variables for {n} inputs X")
        cdef cnp.ndarray a
        sizes = []
        for i in range(n):
            # Only the shape and dtype of X[i] are used: no copy of a non-contiguous X.
            x = xs[i]
            if not isinstance(x, np.ndarray):
                raise TypeError(f"concat_grad: input 'X[{i}]' must be a dense tensor (a NumPy "
                                f"array on the CPU), got {type(x).__name__}")
            a = <cnp.ndarray>x
            s = tuple(x.shape)
            if typenum(a) != typenum(g):
                raise TypeError(f"concat_grad: X[{i}] is {dtype_name(a)} but Out@GRAD is "
                                f"{dtype_name(g)}")
            if len(s) != rank or s[:ax] != gshape[:ax] or s[ax + 1:] != gshape[ax + 1:]:
                raise ValueError(f"concat_grad: X[{i}] has shape {list(s)}, which does not fit "
                                 f"Out@GRAD's {list(gshape)} outside axis {ax}")
            sizes.append(s[ax])
            total += s[ax]
        if total != gshape[ax]:
            raise ValueError(f"concat_grad: the inputs X hold {total} entries along axis {ax}, "
                             f"but Out@GRAD has {gshape[ax]} (shape {list(gshape)})")
        if not wanted:  # X@GRAD unbound: nothing to compute
            return ([],)
        return (scatter(g, gshape, ax, sizes, list(wanted), "concat_grad"),)


KERNELS = [("concat", Concat, ALL_DTYPES), ("split", Split, ALL_DTYPES),
           ("concat_grad", ConcatGrad, GRAD_DTYPES)]
