# Inline helpers shared by every CPU kernel module of every plugin (no runtime cost).
cimport numpy as cnp
from cpython.object cimport PyObject
from cpython.ref cimport _Py_REFCNT

cdef extern from *:
    """
    #include <string.h>
    #ifndef PyDataMem_GetHandler   /* headers targeting NumPy < 1.22: the API's slot 305 */
    #define PyDataMem_GetHandler (*(PyObject * (*)(void)) PyArray_API[305])
    #endif
    /* Whether NumPy's current handler (a context variable) is headrace's host pool
       (runtime/_host_pool.pyx, named so), i.e. whether this kernel runs in an Executor's
       run that allocates from the pool. */
    static int hr_host_pooled(void) {
        PyObject *h = PyDataMem_GetHandler();
        PyDataMem_Handler *p;
        int r = 0;
        if (h == NULL) { PyErr_Clear(); return 0; }
        p = (PyDataMem_Handler *)PyCapsule_GetPointer(h, "mem_handler");
        if (p == NULL) PyErr_Clear();
        else r = strcmp(p->name, "headrace_host_pool") == 0;
        Py_DECREF(h);
        return r;
    }
    """
    bint hr_host_pooled()

ctypedef fused real:
    float
    double


cdef inline bint behaved(cnp.ndarray a):
    """Aligned and in native byte order: raw pointers of the dtype's C type may read it."""
    return cnp.PyArray_ISALIGNED(a) and cnp.PyArray_ISNOTSWAPPED(a)


cdef inline cnp.ndarray _normalized(object x):
    import numpy as np
    a = np.asarray(x)
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    # np.require keeps 0-d arrays 0-d (np.ascontiguousarray would make them 1-d).
    return np.require(a, requirements=("C", "A"))


cdef inline cnp.ndarray contiguous(object x):
    """``x`` as a C-contiguous, aligned, native-endian ndarray (no copy when it already is one).

    Alignment and byte order matter as much as contiguity: kernels read through typed C
    pointers, and PyArray_TYPE reports float32 for a big-endian '>f4' array too.
    """
    if type(x) is cnp.ndarray and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>x) and \
            behaved(<cnp.ndarray>x):
        return <cnp.ndarray>x
    return _normalized(x)


cdef inline int check_plain(cnp.ndarray a, str op, str slot) except -1:
    """Kernels move raw bytes: only plain numeric/bool dtypes may pass (copying the pointers
    of an object array without reference counting would corrupt the interpreter)."""
    if (<object>a).dtype.kind not in "biufc":
        raise TypeError(f"{op}: input '{slot}' has dtype {(<object>a).dtype}, expected a "
                        f"numeric or bool dtype")
    return 0


cdef inline str dtype_name(object a):
    """The dtype's name for messages (``str(a.dtype)`` would show the byte order)."""
    return (<object>a).dtype.name


cdef inline cnp.ndarray empty_like(cnp.ndarray x):
    return cnp.PyArray_EMPTY(cnp.PyArray_NDIM(x), cnp.PyArray_DIMS(x), cnp.PyArray_TYPE(x), 0)


cdef inline cnp.ndarray empty(tuple shape, int typenum):
    # 64 = NPY_MAXDIMS of NumPy 2; NumPy itself refuses more, so this only guards the stack.
    cdef cnp.npy_intp dims[64]
    cdef int i, nd = len(shape)
    if nd > 64:
        raise ValueError(f"a result of rank {nd} exceeds NumPy's 64 dims")
    for i in range(nd):
        dims[i] = shape[i]
    return cnp.PyArray_EMPTY(nd, dims, typenum, 0)


cdef inline tuple shape_of(cnp.ndarray a):
    """The shape as a Python tuple (``a.shape`` on a typed ndarray is the C pointer)."""
    cdef int i, nd = cnp.PyArray_NDIM(a)
    cdef cnp.npy_intp* d = cnp.PyArray_DIMS(a)
    return tuple([d[i] for i in range(nd)])


cdef inline bint same_shape(cnp.ndarray a, cnp.ndarray b):
    cdef int i, nd = cnp.PyArray_NDIM(a)
    if nd != cnp.PyArray_NDIM(b):
        return False
    for i in range(nd):
        if cnp.PyArray_DIMS(a)[i] != cnp.PyArray_DIMS(b)[i]:
            return False
    return True


cdef inline int typenum(cnp.ndarray a) noexcept:
    """PyArray_TYPE with NumPy's second 64-bit integer code (``np.longlong``, also named
    int64 on LP64 systems) folded into NPY_INT64, so kernels dispatch on one code per dtype."""
    cdef int t = cnp.PyArray_TYPE(a)
    if t == cnp.NPY_LONGLONG and sizeof(long long) == sizeof(cnp.npy_int64):
        return cnp.NPY_INT64
    return t


cdef inline Py_ssize_t prod(object dims):
    """The product of a shape (1 for ``()``)."""
    cdef Py_ssize_t n = 1
    for d in dims:
        n *= <Py_ssize_t>d
    return n


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


cdef inline object kept(cnp.ndarray out):
    """What a kernel that recycles its result keeps of ``out`` for its next call: ``out``,
    or None for an array of 32 KiB or more in a run that allocates from headrace's host pool
    (``runtime.host_memory``). There the run lets go of each value after its last reader
    (``runtime.liveness``) and the pool hands its block, still in cache, to the next array
    of that size: the ops of a run share the few blocks of its live set instead of each
    keeping its own (ResNet inference at batch 64: 12.7 MB live at most, 27 MB kept one block
    an op). Smaller results are kept (they stay in cache either way, and recycling one costs
    less than allocating it: a batch-1 MLP's three fc ops)."""
    if cnp.PyArray_NBYTES(out) < 32768 or not hr_host_pooled():
        return out
    return None
