# Broadcasting of two C-contiguous operands, shared by elementwise, compare and logical.
#
# ``broadcast`` aligns the shapes (NumPy's trailing rule, or Paddle's ``axis``), computes the
# output shape and each operand's element strides over it (0 on broadcast dims), and merges
# adjacent dims that broadcast alike, so [N, C, H, W] + [C, 1, 1] at axis=1 is a 3-D walk and
# [N, C] + [C] a 2-D one. Kernels then walk the output row by row with ``walk_next`` and run
# their own inner loop over a row (length dims[nd-1], strides sx[nd-1], sy[nd-1]).
cimport numpy as cnp

cdef enum:
    MAXDIM = 64   # NPY_MAXDIMS of NumPy 2: no operand can have more dims


cdef struct Bcast:
    int out_nd                        # the output's rank and shape (for PyArray_EMPTY)
    cnp.npy_intp out_shape[MAXDIM]
    Py_ssize_t size                   # output elements (0: nothing to walk)
    int nd                            # merged dims, >= 1
    Py_ssize_t dims[MAXDIM]
    Py_ssize_t sx[MAXDIM]             # element strides of X / Y over the merged dims
    Py_ssize_t sy[MAXDIM]


cdef struct Walk:
    Py_ssize_t ox, oy, o              # element offsets of the current row in X, Y and Out
    Py_ssize_t idx[MAXDIM]


cdef int broadcast(cnp.ndarray a, cnp.ndarray b, int axis, Bcast* bc, str name) except -1


cdef inline void walk_start(Walk* w, const Bcast* bc) noexcept nogil:
    cdef int d
    w.ox = w.oy = w.o = 0
    for d in range(bc.nd):
        w.idx[d] = 0


cdef inline bint walk_next(Walk* w, const Bcast* bc) noexcept nogil:
    """Advance to the next row of the output; False once every row has been visited."""
    cdef int d = bc.nd - 2
    w.o += bc.dims[bc.nd - 1]
    while d >= 0:
        w.idx[d] += 1
        w.ox += bc.sx[d]
        w.oy += bc.sy[d]
        if w.idx[d] < bc.dims[d]:
            return True
        w.ox -= bc.sx[d] * bc.dims[d]
        w.oy -= bc.sy[d] * bc.dims[d]
        w.idx[d] = 0
        d -= 1
    return False
