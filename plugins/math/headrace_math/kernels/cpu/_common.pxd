# Helpers of this plugin's CPU kernels; the ones every plugin shares are in
# headrace/kernels/common.pxd (cimported from the core).
cimport numpy as cnp
from headrace.kernels.common cimport empty, typenum
from cpython.object cimport PyObject
from cpython.ref cimport _Py_REFCNT


ctypedef fused number:
    float
    double
    int
    long long


cdef inline bint is_nan(number v) noexcept nogil:
    """v != v for floats; integers are never NaN (decided at compile time, so the integer
    specializations carry no self-comparison)."""
    if number is float or number is double:
        return v != v
    else:
        return False


cdef inline cnp.ndarray recycled(PyObject* prev, tuple shape, int typenum):
    """An output array for a kernel that keeps its last result (``prev``, passed as a borrowed
    pointer: ``<PyObject*>self._out``): ``prev`` itself when the kernel's own reference is the
    only one left and it has this shape and dtype, else a new uninitialized array.

    Nothing else can see an array only the kernel references (the executor drops a run's
    values when the run ends; anything that kept it, a scope, a fetch, a view, a later op
    of a loop body, holds a reference), so overwriting it is safe. Reusing it spares the
    page faults of a fresh large allocation: glibc maps blocks of 128 KiB and more afresh
    and unmaps them when freed, on every run."""
    cdef cnp.ndarray a
    cdef int i, nd = len(shape)
    if prev == NULL or _Py_REFCNT(prev) != 1 or not cnp.PyArray_Check(<object>prev):
        return empty(shape, typenum)
    a = <cnp.ndarray><object>prev
    if cnp.PyArray_TYPE(a) != typenum or cnp.PyArray_NDIM(a) != nd or \
            not cnp.PyArray_IS_C_CONTIGUOUS(a) or not cnp.PyArray_ISWRITEABLE(a):
        return empty(shape, typenum)
    for i in range(nd):
        if cnp.PyArray_DIMS(a)[i] != <cnp.npy_intp>shape[i]:
            return empty(shape, typenum)
    return a
