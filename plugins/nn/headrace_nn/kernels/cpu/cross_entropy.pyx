# cython: language_level=3, boundscheck=False, cdivision=True
# wraparound stays on: shapes are Python tuples indexed from the end (xs[-1], xs[:-1]); the
# C loops index raw pointers, which it never touches.
"""cross_entropy, cross_entropy2 and softmax_with_cross_entropy.

Hard labels are class ids; every id other than ignore_index is checked against the class count
inside the loop, and the first bad one is raised as an IndexError after the loop (the GIL is
not held there), so no id is ever used to read out of bounds.

softmax_with_cross_entropy views Logits as [outer, C, inner] around ``axis`` and computes
log-softmax stably: log p = x - max - log(sum exp(x - max)), so a hard label's loss never
takes the log of an underflowed 0.

Gradients (ignored rows get 0; labels are checked as in the forward kernels):
- cross_entropy_grad(X, Label, Y@GRAD): hard X@GRAD[i, l] = -Y@GRAD[i] / X[i, l], 0 elsewhere;
  soft X@GRAD = -Label * Y@GRAD / X.
- cross_entropy_grad2(MatchX, Label, XShape, Y@GRAD) (Paddle's name and slots): X@GRAD[i, l] =
  -Y@GRAD[i] / MatchX[i]; X is not read, its dims come from XShape (X.dims + [0]).
- softmax_with_cross_entropy_grad(Softmax, Label, Loss@GRAD): hard (Softmax - onehot(Label)) *
  Loss@GRAD; soft (Softmax * sum(Label) - Label) * Loss@GRAD, which is Paddle's
  (Softmax - Label) * Loss@GRAD for labels that are distributions and the exact derivative for
  any others. With use_softmax=false (Softmax is Logits, probabilities) the gradient is
  cross_entropy's: -Loss@GRAD / Softmax at the label (hard) or -Label * Loss@GRAD / Softmax.
"""
cimport numpy as cnp
from libc.math cimport exp, log
from libc.stdlib cimport free, malloc
from headrace.kernels.common cimport contiguous, empty, prod, real, shape_of
from ._common cimport expect_shape, float_array, same_float

import numpy as np

cnp.import_array()

DTYPES = ("float32", "float64")


cdef Py_ssize_t _hard(const real* x, const long long* lab, real* y, real* match,
                      Py_ssize_t N, Py_ssize_t C, long long ignore) noexcept nogil:
    """Y[i] = -log(X[i, lab[i]]); returns the first row with a bad id, or -1."""
    cdef Py_ssize_t i
    cdef long long l
    cdef real p
    for i in range(N):
        l = lab[i]
        if l == ignore:
            y[i] = 0
            if match != NULL:
                match[i] = 0
            continue
        if l < 0 or l >= C:
            return i
        p = x[i * C + l]
        y[i] = <real>(-log(<double>p))
        if match != NULL:
            match[i] = p
    return -1


cdef void _soft(const real* x, const real* lab, real* y, Py_ssize_t N,
                Py_ssize_t C) noexcept nogil:
    cdef Py_ssize_t i, c
    cdef double s
    for i in range(N):
        s = 0.0
        for c in range(C):
            s -= <double>lab[i * C + c] * log(<double>x[i * C + c])
        y[i] = <real>s


cdef cnp.ndarray _float_input(object v, str op, str slot):
    cdef cnp.ndarray a = contiguous(v)
    cdef int t = cnp.PyArray_TYPE(a)
    if t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64:
        raise TypeError(f"{op}: {slot} has dtype {a.dtype}, expected float32 or float64")
    return a


cdef cnp.ndarray _int64_labels(object v, str op, bint allow_int32):
    cdef cnp.ndarray a = contiguous(v)
    cdef int t = cnp.PyArray_TYPE(a)
    if t == cnp.NPY_INT64 or t == cnp.NPY_LONGLONG:
        return a
    if allow_int32 and t == cnp.NPY_INT32:
        return a.astype(np.int64)
    raise TypeError(f"{op}: hard Label has dtype {a.dtype}, expected int64"
                    + (" or int32" if allow_int32 else ""))


cdef tuple _hard_label_shape(tuple xs, tuple ls, str op):
    """Y's shape for hard labels [..., 1] (-> [..., 1]) or [...] (-> [...])."""
    lead = xs[:-1]
    if len(ls) == len(xs) and ls[:-1] == lead and ls[-1] == 1:
        return lead + (1,)
    if ls == lead:
        return lead
    raise ValueError(f"{op}: hard Label{list(ls)} does not fit X{list(xs)}: expected "
                     f"{list(lead + (1,))} or {list(lead)}")


cdef class CrossEntropy:
    """cross_entropy (hard or soft labels) and, with ``v2``, cross_entropy2."""
    cdef bint soft, v2
    cdef long long ignore
    cdef str name

    def __init__(self, dict attrs, info=None, bint v2=False):
        self.v2 = v2
        self.name = "cross_entropy2" if v2 else "cross_entropy"
        self.soft = False if v2 else attrs.get("soft_label", False)
        self.ignore = attrs.get("ignore_index", -100)

    def __call__(self, x, label):
        cdef cnp.ndarray a = _float_input(x, self.name, "X")
        cdef int t = cnp.PyArray_TYPE(a)
        cdef tuple xs = shape_of(a)
        if len(xs) < 1:
            raise ValueError(f"{self.name}: X must have a class dimension, got shape []")
        cdef Py_ssize_t C = xs[-1], N = prod(xs[:-1])
        cdef cnp.ndarray lab, y, match = None
        cdef Py_ssize_t bad = -1
        cdef void* mp = NULL
        if self.soft:
            lab = contiguous(label)
            if cnp.PyArray_TYPE(lab) != t:
                raise TypeError(f"{self.name}: soft Label has dtype {lab.dtype}, expected "
                                f"X's {a.dtype}")
            if shape_of(lab) != xs:
                raise ValueError(f"{self.name}: soft Label{list(shape_of(lab))} must have "
                                 f"X's shape {list(xs)}")
            y = empty(xs[:-1] + (1,), t)
            if t == cnp.NPY_FLOAT32:
                with nogil:
                    _soft(<const float*>cnp.PyArray_DATA(a), <const float*>cnp.PyArray_DATA(lab),
                          <float*>cnp.PyArray_DATA(y), N, C)
            else:
                with nogil:
                    _soft(<const double*>cnp.PyArray_DATA(a),
                          <const double*>cnp.PyArray_DATA(lab), <double*>cnp.PyArray_DATA(y),
                          N, C)
            return (y,)
        lab = _int64_labels(label, self.name, False)
        y = empty(_hard_label_shape(xs, shape_of(lab), self.name), t)
        if self.v2:
            match = empty(xs[:-1] + (1,), t)
            mp = cnp.PyArray_DATA(match)
        if t == cnp.NPY_FLOAT32:
            with nogil:
                bad = _hard(<const float*>cnp.PyArray_DATA(a),
                            <const long long*>cnp.PyArray_DATA(lab),
                            <float*>cnp.PyArray_DATA(y), <float*>mp, N, C, self.ignore)
        else:
            with nogil:
                bad = _hard(<const double*>cnp.PyArray_DATA(a),
                            <const long long*>cnp.PyArray_DATA(lab),
                            <double*>cnp.PyArray_DATA(y), <double*>mp, N, C, self.ignore)
        if bad >= 0:
            raise IndexError(f"{self.name}: Label value {lab.reshape(-1)[bad]} (row {bad}) is "
                             f"out of range for {C} classes (ignore_index={self.ignore})")
        if not self.v2:
            return (y,)
        # XShape carries X's dims (and a trailing 0) to the gradient: it holds no data.
        return (y, empty(xs + (0,), t), match)


def cross_entropy2(dict attrs, info=None):
    return CrossEntropy(attrs, info, True)


cdef Py_ssize_t _swce(const real* x, const long long* hard, const real* soft, real* sm,
                      real* loss, Py_ssize_t outer, Py_ssize_t C, Py_ssize_t inner,
                      long long ignore, bint use_softmax) noexcept nogil:
    """Softmax and loss of [outer, C, inner]; returns the first bad label position, or -1."""
    cdef Py_ssize_t o, c, i, base, k
    cdef long long l
    cdef double m, s, acc, v
    cdef double lse = 0.0   # set when use_softmax, the only case that reads it
    for o in range(outer):
        for i in range(inner):
            base = o * C * inner + i
            k = o * inner + i
            if use_softmax:
                m = x[base]
                for c in range(1, C):
                    if x[base + c * inner] > m:
                        m = x[base + c * inner]
                s = 0.0
                for c in range(C):
                    v = exp(<double>x[base + c * inner] - m)
                    sm[base + c * inner] = <real>v
                    s += v
                lse = m + log(s)          # log(sum exp x): log p = x - lse
                for c in range(C):
                    sm[base + c * inner] = <real>(sm[base + c * inner] / s)
            else:
                for c in range(C):
                    sm[base + c * inner] = x[base + c * inner]
            if hard != NULL:
                l = hard[k]
                if l == ignore:
                    loss[k] = 0
                    continue
                if l < 0 or l >= C:
                    return k
                if use_softmax:
                    loss[k] = <real>(lse - x[base + l * inner])
                else:
                    loss[k] = <real>(-log(<double>x[base + l * inner]))
            else:
                acc = 0.0
                for c in range(C):
                    if use_softmax:
                        acc += soft[base + c * inner] * (lse - x[base + c * inner])
                    else:
                        acc -= soft[base + c * inner] * log(<double>x[base + c * inner])
                loss[k] = <real>acc
    return -1


cdef class SoftmaxWithCrossEntropy:
    cdef bint soft, use_softmax
    cdef long long ignore
    cdef int axis

    def __init__(self, dict attrs, info=None):
        self.soft = attrs.get("soft_label", False)
        self.ignore = attrs.get("ignore_index", -100)
        self.axis = attrs.get("axis", -1)
        self.use_softmax = attrs.get("use_softmax", True)

    def __call__(self, logits, label):
        name = "softmax_with_cross_entropy"
        cdef cnp.ndarray a = _float_input(logits, name, "Logits")
        cdef int t = cnp.PyArray_TYPE(a)
        cdef tuple xs = shape_of(a)
        cdef int rank = len(xs), axis = self.axis
        if rank < 1:
            raise ValueError(f"{name}: Logits must have a class dimension, got shape []")
        if not -rank <= axis < rank:
            raise ValueError(f"{name}: axis {axis} is out of range for Logits{list(xs)}")
        if axis < 0:
            axis += rank
        cdef Py_ssize_t outer = prod(xs[:axis]), C = xs[axis], inner = prod(xs[axis + 1:])
        cdef cnp.ndarray lab
        cdef const long long* hp = NULL
        cdef const void* sp = NULL
        if self.soft:
            lab = contiguous(label)
            if cnp.PyArray_TYPE(lab) != t:
                raise TypeError(f"{name}: soft Label has dtype {lab.dtype}, expected "
                                f"Logits' {a.dtype}")
            if shape_of(lab) != xs:
                raise ValueError(f"{name}: soft Label{list(shape_of(lab))} must have Logits' "
                                 f"shape {list(xs)}")
            sp = cnp.PyArray_DATA(lab)
        else:
            lab = _int64_labels(label, name, True)
            want = xs[:axis] + (1,) + xs[axis + 1:]
            if shape_of(lab) != want:
                raise ValueError(f"{name}: hard Label{list(shape_of(lab))} must be "
                                 f"{list(want)} (Logits{list(xs)}, axis {axis})")
            hp = <const long long*>cnp.PyArray_DATA(lab)
        cdef cnp.ndarray sm = empty(xs, t)
        cdef cnp.ndarray loss = empty(xs[:axis] + (1,) + xs[axis + 1:], t)
        cdef Py_ssize_t bad = -1
        if C == 0 and outer * inner > 0:
            raise ValueError(f"{name}: Logits{list(xs)} has no classes on axis {axis}")
        if t == cnp.NPY_FLOAT32:
            with nogil:
                bad = _swce(<const float*>cnp.PyArray_DATA(a), hp, <const float*>sp,
                            <float*>cnp.PyArray_DATA(sm), <float*>cnp.PyArray_DATA(loss),
                            outer, C, inner, self.ignore, self.use_softmax)
        else:
            with nogil:
                bad = _swce(<const double*>cnp.PyArray_DATA(a), hp, <const double*>sp,
                            <double*>cnp.PyArray_DATA(sm), <double*>cnp.PyArray_DATA(loss),
                            outer, C, inner, self.ignore, self.use_softmax)
        if bad >= 0:
            raise IndexError(f"{name}: Label value {lab.reshape(-1)[bad]} (position {bad}) is "
                             f"out of range for {C} classes (ignore_index={self.ignore})")
        return (sm, loss)


# -- gradients ----------------------------------------------------------------------------------

cdef Py_ssize_t _hard_grad(const real* p, bint matched, const long long* lab,
                           const real* dy, real* dx, Py_ssize_t N, Py_ssize_t C,
                           long long ignore) noexcept nogil:
    """dx[i, l] = -dy[i] / X[i, l] into a zeroed dx [N, C], l = lab[i]; ``matched``: p is MatchX
    [N] (X[i, l] already picked) rather than X [N, C]. Returns the first bad row, or -1."""
    cdef Py_ssize_t i
    cdef long long l
    for i in range(N):
        l = lab[i]
        if l == ignore:
            continue
        if l < 0 or l >= C:
            return i
        if matched:
            dx[i * C + l] = -dy[i] / p[i]
        else:
            dx[i * C + l] = -dy[i] / p[i * C + l]
    return -1


cdef void _soft_grad(const real* x, const real* lab, const real* dy, real* dx, Py_ssize_t N,
                     Py_ssize_t C) noexcept nogil:
    cdef Py_ssize_t i, c
    for i in range(N):
        for c in range(C):
            dx[i * C + c] = -lab[i * C + c] * dy[i] / x[i * C + c]


cdef class CrossEntropyGrad:
    """cross_entropy_grad(X, Label, Y@GRAD) -> (X@GRAD,)."""
    cdef bint soft, want
    cdef long long ignore

    def __init__(self, dict attrs, info=None):
        self.soft = attrs.get("soft_label", False)
        self.ignore = attrs.get("ignore_index", -100)
        self.want = info is None or info.wants("X@GRAD")

    def __call__(self, x, label, dy):
        name = "cross_entropy_grad"
        cdef cnp.ndarray a = float_array(x, name, "X")
        cdef cnp.ndarray g = float_array(dy, name, "Y@GRAD")
        same_float(a, g, name, "X", "Y@GRAD")
        cdef int t = cnp.PyArray_TYPE(a)
        cdef tuple xs = shape_of(a)
        if len(xs) < 1:
            raise ValueError(f"{name}: X must have a class dimension, got shape []")
        cdef Py_ssize_t C = xs[-1], N = prod(xs[:-1]), bad = -1
        cdef cnp.ndarray lab, dx
        if self.soft:
            lab = contiguous(label)
            if cnp.PyArray_TYPE(lab) != t:
                raise TypeError(f"{name}: soft Label has dtype {lab.dtype}, expected X's "
                                f"{a.dtype}")
            expect_shape(lab, xs, name, "soft Label", "X's shape")
            expect_shape(g, xs[:-1] + (1,), name, "Y@GRAD", "Y's shape")
            if not self.want:
                return (None,)
            dx = empty(xs, t)
            if t == cnp.NPY_FLOAT32:
                with nogil:
                    _soft_grad(<const float*>cnp.PyArray_DATA(a),
                               <const float*>cnp.PyArray_DATA(lab),
                               <const float*>cnp.PyArray_DATA(g), <float*>cnp.PyArray_DATA(dx),
                               N, C)
            else:
                with nogil:
                    _soft_grad(<const double*>cnp.PyArray_DATA(a),
                               <const double*>cnp.PyArray_DATA(lab),
                               <const double*>cnp.PyArray_DATA(g),
                               <double*>cnp.PyArray_DATA(dx), N, C)
            return (dx,)
        lab = _int64_labels(label, name, False)
        expect_shape(g, _hard_label_shape(xs, shape_of(lab), name), name, "Y@GRAD",
                     "Y's shape")
        if not self.want:
            return (None,)
        dx = np.zeros(xs, a.dtype)
        if t == cnp.NPY_FLOAT32:
            with nogil:
                bad = _hard_grad(<const float*>cnp.PyArray_DATA(a), False,
                                 <const long long*>cnp.PyArray_DATA(lab),
                                 <const float*>cnp.PyArray_DATA(g), <float*>cnp.PyArray_DATA(dx),
                                 N, C, self.ignore)
        else:
            with nogil:
                bad = _hard_grad(<const double*>cnp.PyArray_DATA(a), False,
                                 <const long long*>cnp.PyArray_DATA(lab),
                                 <const double*>cnp.PyArray_DATA(g),
                                 <double*>cnp.PyArray_DATA(dx), N, C, self.ignore)
        if bad >= 0:
            raise IndexError(f"{name}: Label value {lab.reshape(-1)[bad]} (row {bad}) is out "
                             f"of range for {C} classes (ignore_index={self.ignore})")
        return (dx,)


cdef class CrossEntropyGrad2:
    """cross_entropy_grad2(MatchX, Label, XShape, Y@GRAD) -> (X@GRAD,)."""
    cdef bint want
    cdef long long ignore

    def __init__(self, dict attrs, info=None):
        self.ignore = attrs.get("ignore_index", -100)
        self.want = info is None or info.wants("X@GRAD")

    def __call__(self, matchx, label, xshape, dy):
        name = "cross_entropy_grad2"
        cdef cnp.ndarray m = float_array(matchx, name, "MatchX")
        cdef cnp.ndarray g = float_array(dy, name, "Y@GRAD")
        cdef cnp.ndarray shp = float_array(xshape, name, "XShape")
        same_float(m, g, name, "MatchX", "Y@GRAD")
        same_float(m, shp, name, "MatchX", "XShape")
        cdef tuple full = shape_of(shp)
        if len(full) < 2 or full[-1] != 0:
            raise ValueError(f"{name}: XShape{list(full)} must be X.dims + [0] with X of "
                             f"rank >= 1")
        cdef tuple xs = full[:-1]
        cdef Py_ssize_t C = xs[-1], N = prod(xs[:-1]), bad = -1
        cdef cnp.ndarray lab = _int64_labels(label, name, False)
        expect_shape(m, xs[:-1] + (1,), name, "MatchX", "the shape")
        expect_shape(g, _hard_label_shape(xs, shape_of(lab), name), name, "Y@GRAD",
                     "Y's shape")
        if not self.want:
            return (None,)
        cdef int t = cnp.PyArray_TYPE(m)
        cdef cnp.ndarray dx = np.zeros(xs, m.dtype)
        if t == cnp.NPY_FLOAT32:
            with nogil:
                bad = _hard_grad(<const float*>cnp.PyArray_DATA(m), True,
                                 <const long long*>cnp.PyArray_DATA(lab),
                                 <const float*>cnp.PyArray_DATA(g), <float*>cnp.PyArray_DATA(dx),
                                 N, C, self.ignore)
        else:
            with nogil:
                bad = _hard_grad(<const double*>cnp.PyArray_DATA(m), True,
                                 <const long long*>cnp.PyArray_DATA(lab),
                                 <const double*>cnp.PyArray_DATA(g),
                                 <double*>cnp.PyArray_DATA(dx), N, C, self.ignore)
        if bad >= 0:
            raise IndexError(f"{name}: Label value {lab.reshape(-1)[bad]} (row {bad}) is out "
                             f"of range for {C} classes (ignore_index={self.ignore})")
        return (dx,)


cdef Py_ssize_t _swce_grad(const long long* hard, const real* soft, const real* sm,
                           const real* dl, real* dx, Py_ssize_t outer, Py_ssize_t C,
                           Py_ssize_t inner, long long ignore, bint use_softmax) noexcept nogil:
    """Logits@GRAD of [outer, C, inner]; returns the first bad label position, or -1."""
    cdef Py_ssize_t o, c, i, base, k, step
    cdef long long l
    cdef real d
    cdef double tot
    for o in range(outer):
        for i in range(inner):
            base = o * C * inner + i
            k = o * inner + i
            d = dl[k]
            if hard != NULL:
                l = hard[k]
                if l == ignore:
                    for c in range(C):
                        dx[base + c * inner] = 0
                    continue
                if l < 0 or l >= C:
                    return k
                if use_softmax:
                    for c in range(C):
                        dx[base + c * inner] = sm[base + c * inner] * d
                    dx[base + l * inner] -= d
                else:
                    for c in range(C):
                        dx[base + c * inner] = 0
                    dx[base + l * inner] = -d / sm[base + l * inner]
            elif use_softmax:
                tot = 0.0
                for c in range(C):
                    tot += soft[base + c * inner]
                for c in range(C):
                    dx[base + c * inner] = <real>((sm[base + c * inner] * tot
                                                   - soft[base + c * inner]) * d)
            else:
                for c in range(C):
                    dx[base + c * inner] = -soft[base + c * inner] * d / sm[base + c * inner]
    return -1


cdef class SoftmaxWithCrossEntropyGrad:
    """softmax_with_cross_entropy_grad(Softmax, Label, Loss@GRAD) -> (Logits@GRAD,)."""
    cdef bint soft, use_softmax, want
    cdef long long ignore
    cdef int axis

    def __init__(self, dict attrs, info=None):
        self.soft = attrs.get("soft_label", False)
        self.ignore = attrs.get("ignore_index", -100)
        self.axis = attrs.get("axis", -1)
        self.use_softmax = attrs.get("use_softmax", True)
        self.want = info is None or info.wants("Logits@GRAD")

    def __call__(self, softmax, label, dloss):
        name = "softmax_with_cross_entropy_grad"
        cdef cnp.ndarray sm = float_array(softmax, name, "Softmax")
        cdef cnp.ndarray g = float_array(dloss, name, "Loss@GRAD")
        same_float(sm, g, name, "Softmax", "Loss@GRAD")
        cdef int t = cnp.PyArray_TYPE(sm)
        cdef tuple xs = shape_of(sm)
        cdef int rank = len(xs), axis = self.axis
        if rank < 1:
            raise ValueError(f"{name}: Softmax must have a class dimension, got shape []")
        if not -rank <= axis < rank:
            raise ValueError(f"{name}: axis {axis} is out of range for Softmax{list(xs)}")
        if axis < 0:
            axis += rank
        cdef Py_ssize_t outer = prod(xs[:axis]), C = xs[axis], inner = prod(xs[axis + 1:])
        cdef tuple lshape = xs[:axis] + (1,) + xs[axis + 1:]
        expect_shape(g, lshape, name, "Loss@GRAD", "Loss's shape")
        cdef cnp.ndarray lab
        cdef const long long* hp = NULL
        cdef const void* sp = NULL
        if self.soft:
            lab = contiguous(label)
            if cnp.PyArray_TYPE(lab) != t:
                raise TypeError(f"{name}: soft Label has dtype {lab.dtype}, expected "
                                f"Softmax's {sm.dtype}")
            expect_shape(lab, xs, name, "soft Label", "Softmax's shape")
            sp = cnp.PyArray_DATA(lab)
        else:
            lab = _int64_labels(label, name, True)
            expect_shape(lab, lshape, name, "hard Label", f"(axis {axis}) the shape")
            hp = <const long long*>cnp.PyArray_DATA(lab)
        if not self.want:
            return (None,)
        cdef cnp.ndarray dx = empty(xs, t)
        cdef Py_ssize_t bad = -1
        if t == cnp.NPY_FLOAT32:
            with nogil:
                bad = _swce_grad(hp, <const float*>sp, <const float*>cnp.PyArray_DATA(sm),
                                 <const float*>cnp.PyArray_DATA(g), <float*>cnp.PyArray_DATA(dx),
                                 outer, C, inner, self.ignore, self.use_softmax)
        else:
            with nogil:
                bad = _swce_grad(hp, <const double*>sp, <const double*>cnp.PyArray_DATA(sm),
                                 <const double*>cnp.PyArray_DATA(g),
                                 <double*>cnp.PyArray_DATA(dx), outer, C, inner, self.ignore,
                                 self.use_softmax)
        if bad >= 0:
            raise IndexError(f"{name}: Label value {lab.reshape(-1)[bad]} (position {bad}) is "
                             f"out of range for {C} classes (ignore_index={self.ignore})")
        return (dx,)


KERNELS = [("cross_entropy", CrossEntropy, DTYPES),
           ("cross_entropy2", cross_entropy2, DTYPES),
           ("softmax_with_cross_entropy", SoftmaxWithCrossEntropy, DTYPES),
           ("cross_entropy_grad", CrossEntropyGrad, DTYPES),
           ("cross_entropy_grad2", CrossEntropyGrad2, DTYPES),
           ("softmax_with_cross_entropy_grad", SoftmaxWithCrossEntropyGrad, DTYPES)]
