# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""sequence_concat and its gradient as byte copies (any element type): Out's sequence i is
sequence i of X[0], X[1], ... in turn, so the forward copies each input's rows of a sequence
to the next free rows of Out, and the gradient copies them back."""
cimport numpy as cnp
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.string cimport memcpy
from headrace.kernels.common cimport check_plain, contiguous, dtype_name, typenum

import numpy as np

from headrace.runtime.tensor import Tensor

cnp.import_array()

DTYPES = ("int32", "int64", "float32", "float64")


cdef Py_ssize_t _features(cnp.ndarray a):
    cdef Py_ssize_t n = 1, i
    for i in range(1, cnp.PyArray_NDIM(a)):
        n *= cnp.PyArray_DIMS(a)[i]
    return n


def _inputs(xs, op):
    """The inputs as contiguous arrays, their offsets [inputs, sequences + 1] and the row
    size in bytes, after checking that they can be joined."""
    if not isinstance(xs, list) or len(xs) < 2:
        raise ValueError(f"{op}: X must hold at least two sequence batches")
    datas, offsets = [], []
    # Python objects: the messages show their .shape tuples.
    cdef object a, first = None
    cdef Py_ssize_t feature = 0
    for i, x in enumerate(xs):
        a = contiguous(x.data)
        check_plain(a, op, f"X[{i}]")
        if cnp.PyArray_NDIM(a) < 1:
            raise ValueError(f"{op}: X[{i}] must have a row dim, found a 0-D tensor")
        if len(x.lod) != 1:
            raise ValueError(f"{op}: X[{i}] must be a batch of sequences with one LoD level; "
                             f"found {len(x.lod)} levels")
        off = np.asarray(x.lod[0], np.int64)
        rows = a.shape[0]
        if len(off) < 1 or off[0] != 0 or off[len(off) - 1] != rows or \
                (np.diff(off) < 0).any():
            raise ValueError(f"{op}: X[{i}]'s LoD {off.tolist()} does not describe its {rows} "
                             f"rows")
        if first is None:
            first, feature = a, _features(a)
        else:
            if typenum(a) != typenum(first):
                raise TypeError(f"{op}: X[{i}] has dtype {dtype_name(a)}, X[0] "
                                f"{dtype_name(first)}")
            if len(off) != len(offsets[0]):
                raise ValueError(f"{op}: X[{i}] has {len(off) - 1} sequences, X[0] "
                                 f"{len(offsets[0]) - 1}; the inputs must have as many")
            if _features(a) != feature:
                raise ValueError(f"{op}: X[{i}] has {_features(a)} features per row (shape "
                                 f"{list(a.shape)}), X[0] {feature} (shape "
                                 f"{list(first.shape)})")
        datas.append(a)
        offsets.append(off)
    return datas, np.ascontiguousarray(np.stack(offsets)), feature * first.itemsize


cdef void _copy(char** parts, const cnp.int64_t* off, Py_ssize_t n_in, Py_ssize_t n_seq,
                Py_ssize_t row_bytes, char* joined, bint back) noexcept nogil:
    """Sequence by sequence, input by input: the rows of ``parts[j]`` to the next rows of
    ``joined`` (``back``: from them). A NULL part is skipped (its gradient is not wanted)."""
    cdef Py_ssize_t s, j, a, nbytes
    cdef char* at = joined
    for s in range(n_seq):
        for j in range(n_in):
            a = off[j * (n_seq + 1) + s]
            nbytes = (off[j * (n_seq + 1) + s + 1] - a) * row_bytes
            if parts[j] != NULL and nbytes:
                if back:
                    memcpy(parts[j] + a * row_bytes, at, nbytes)
                else:
                    memcpy(at, parts[j] + a * row_bytes, nbytes)
            at += nbytes


cdef int _run(list arrays, cnp.ndarray off, Py_ssize_t row_bytes, cnp.ndarray joined,
              bint back) except -1:
    cdef Py_ssize_t j, n_in = len(arrays), n_seq = off.shape[1] - 1
    cdef char** parts = <char**>PyMem_Malloc(n_in * sizeof(char*))
    if parts == NULL:
        raise MemoryError()
    try:
        for j in range(n_in):
            parts[j] = NULL if arrays[j] is None else \
                <char*>cnp.PyArray_DATA(<cnp.ndarray>arrays[j])
        with nogil:
            _copy(parts, <cnp.int64_t*>cnp.PyArray_DATA(off), n_in, n_seq, row_bytes,
                  <char*>cnp.PyArray_DATA(joined), back)
    finally:
        PyMem_Free(parts)
    return 0


cdef class SequenceConcat:

    def __init__(self, dict attrs, info=None):
        pass

    def __call__(self, xs):
        datas, off, row_bytes = _inputs(xs, "sequence_concat")
        first = datas[0]
        out = np.empty((int(sum(d.shape[0] for d in datas)),) + first.shape[1:], first.dtype)
        _run(datas, off, row_bytes, out, False)
        return (Tensor(out, [off.sum(axis=0).tolist()]),)


cdef class SequenceConcatGrad:
    """(X, Out@GRAD) -> X@GRAD: X is read for its LoD and shapes; the X@GRAD entries nobody
    wants (``info.wanted``) are not computed (None)."""
    cdef object wanted

    def __init__(self, dict attrs, info=None):
        self.wanted = info.wanted("X@GRAD") if info is not None else None

    def __call__(self, xs, dout):
        op = "sequence_concat_grad"
        cdef object g
        datas, off, row_bytes = _inputs(xs, op)
        first = datas[0]
        g = contiguous(getattr(dout, "data", dout))
        total = int(sum(d.shape[0] for d in datas))
        if g.dtype != first.dtype:
            raise TypeError(f"{op}: Out@GRAD has dtype {dtype_name(g)}, X "
                            f"{dtype_name(first)}")
        if g.ndim < 1 or g.shape[0] != total or g.size != total * _features(first):
            raise ValueError(f"{op}: Out@GRAD has shape {list(g.shape)}, expected {total} "
                             f"rows like {list(first.shape[1:])}")
        wanted = [True] * len(datas) if self.wanted is None else self.wanted
        if len(wanted) != len(datas):
            raise ValueError(f"{op}: {len(wanted)} X@GRAD variables for {len(datas)} inputs")
        dxs = [np.empty_like(d) if w else None for d, w in zip(datas, wanted)]
        _run(dxs, off, row_bytes, g, True)
        return ([None if dx is None else Tensor(dx, x.lod) for dx, x in zip(dxs, xs)],)


KERNELS = [("sequence_concat", SequenceConcat, DTYPES, "lod"),
           ("sequence_concat_grad", SequenceConcatGrad, DTYPES, "lod")]
