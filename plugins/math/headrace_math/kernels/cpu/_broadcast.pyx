# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Shape alignment and broadcast strides for the binary kernels (see _broadcast.pxd).

Everything here is C-level: a broadcasting call costs a few dozen integer operations, so tiny
tensors stay cheap. Python objects are built only for error messages.
"""
cimport numpy as cnp

cnp.import_array()


cdef list _dims(cnp.ndarray a):
    cdef int i
    return [cnp.PyArray_DIMS(a)[i] for i in range(cnp.PyArray_NDIM(a))]


cdef int broadcast(cnp.ndarray a, cnp.ndarray b, int axis, Bcast* bc, str name) except -1:
    """Fill ``bc`` for X=a, Y=b (both C-contiguous); ValueError if they do not broadcast.

    axis == -1 (or equal ranks): NumPy's rule, trailing dims aligned. axis >= 0: Paddle's rule,
    the lower-rank operand's dims start at dim ``axis`` of the other, after dropping its
    trailing 1s that would stick out (X [2, 3, 4, 5] with Y [4, 5, 1] at axis=2 is Y [4, 5]).
    """
    cdef int nx = cnp.PyArray_NDIM(a), ny = cnp.PyArray_NDIM(b)
    cdef cnp.npy_intp* xs = cnp.PyArray_DIMS(a)
    cdef cnp.npy_intp* ys = cnp.PyArray_DIMS(b)
    cdef Py_ssize_t px[MAXDIM]
    cdef Py_ssize_t py[MAXDIM]
    cdef Py_ssize_t rx[MAXDIM]
    cdef Py_ssize_t ry[MAXDIM]
    cdef int r, k, lead_x = 0, lead_y = 0, tx = nx, ty = ny, nd
    cdef Py_ssize_t stx = 1, sty = 1, d, size = 1
    if axis == -1 or nx == ny:
        r = nx if nx > ny else ny
        lead_x, lead_y = r - nx, r - ny
    elif nx > ny:
        while ty > 1 and ys[ty - 1] == 1 and axis + ty > nx:
            ty -= 1
        if not 0 <= axis <= nx - ty:
            raise ValueError(f"{name}: axis={axis} does not align Y{_dims(b)} inside "
                             f"X{_dims(a)}")
        r, lead_y = nx, axis
    else:
        while tx > 1 and xs[tx - 1] == 1 and axis + tx > ny:
            tx -= 1
        if not 0 <= axis <= ny - tx:
            raise ValueError(f"{name}: axis={axis} does not align X{_dims(a)} inside "
                             f"Y{_dims(b)}")
        r, lead_x = ny, axis
    if r > MAXDIM:
        raise ValueError(f"{name}: rank {r} exceeds {MAXDIM} dims")
    # Padded dims: 1 before the operand's own dims and after them (Paddle's axis leaves room
    # on both sides).
    for k in range(r):
        px[k] = xs[k - lead_x] if lead_x <= k < lead_x + tx else 1
        py[k] = ys[k - lead_y] if lead_y <= k < lead_y + ty else 1
    bc.out_nd = r
    for k in range(r):
        if px[k] != py[k] and px[k] != 1 and py[k] != 1:
            raise ValueError(f"{name}: X{_dims(a)} and Y{_dims(b)} cannot be broadcast "
                             f"(axis={axis}): dim {k} is {px[k]} vs {py[k]}")
        bc.out_shape[k] = py[k] if px[k] == 1 else px[k]
        size *= bc.out_shape[k]
    bc.size = size
    # Element strides of the contiguous operands over the output index space.
    for k in range(r - 1, -1, -1):
        d = bc.out_shape[k]
        rx[k] = 0 if px[k] == 1 and d != 1 else stx
        ry[k] = 0 if py[k] == 1 and d != 1 else sty
        stx *= px[k]
        sty *= py[k]
    # Merge runs of dims that broadcast alike (size-1 output dims vanish): fewer, longer rows.
    nd = 0
    for k in range(r):
        d = bc.out_shape[k]
        if d == 1:
            continue
        if nd > 0 and (bc.sx[nd - 1] == 0) == (rx[k] == 0) and \
                (bc.sy[nd - 1] == 0) == (ry[k] == 0) and \
                (bc.sx[nd - 1] == 0 or bc.sx[nd - 1] == rx[k] * d) and \
                (bc.sy[nd - 1] == 0 or bc.sy[nd - 1] == ry[k] * d):
            bc.dims[nd - 1] *= d
            bc.sx[nd - 1] = rx[k]
            bc.sy[nd - 1] = ry[k]
            continue
        bc.dims[nd] = d
        bc.sx[nd] = rx[k]
        bc.sy[nd] = ry[k]
        nd += 1
    if nd == 0:
        bc.dims[0], bc.sx[0], bc.sy[0], nd = 1, 0, 0, 1
    bc.nd = nd
    return 0
