# float32 exp, sigmoid, tanh and gelu (erfc) as straight-line arithmetic, so that loops over
# them vectorize (libm's are scalar calls: 3-4x slower per element, tanh, erfc 10x in double).
#
# Accuracy: within 2e-7 relative of the exact value over the whole float range (a few float32
# ulp), with exp's overflow to inf, underflow to 0 (through the subnormals) and NaN kept.
# Everything is selects and arithmetic; compiled with -fno-trapping-math the branches become
# vector blends. float64 stays on libm, whose results are correctly rounded or nearly so.
# Literals are cast to float (a bare 1.0 is a C double and would widen the whole expression),
# and division is C division (the .pxd does not inherit the including module's directives).
cimport cython
from libc.stdint cimport int32_t

cdef union f32bits:
    float f
    int32_t i


@cython.cdivision(True)
cdef inline float fexp(float x) noexcept nogil:
    """exp(x) = 2**n * e**r with |r| <= ln2/2 (Cephes' expf polynomial). The scale 2**n is
    applied as two factors 2**(n//2) 2**(n - n//2), each a normal float for n in [-152,
    128], so results near the overflow and in the subnormal range round correctly."""
    cdef float t, n, r, p
    cdef int32_t k, k1
    cdef f32bits u, s1, s2
    x = <float>89.0 if x > <float>89.0 else x    # beyond these the result is inf / 0 anyway
    x = <float>-105.0 if x < <float>-105.0 else x
    t = x * <float>1.44269504 + <float>12582912.0     # 1.5 * 2**23: rounds to an integer n
    n = t - <float>12582912.0
    r = x - n * <float>0.693359375                     # ln 2 in two parts, exact products
    r = r - n * <float>-2.12194440e-4
    p = <float>1.9875691500e-4
    p = p * r + <float>1.3981999507e-3
    p = p * r + <float>8.3334519073e-3
    p = p * r + <float>4.1665795894e-2
    p = p * r + <float>1.6666665459e-1
    p = p * r + <float>5.0000001201e-1
    p = p * r * r + r + <float>1
    u.f = t
    k = u.i - 0x4B400000                   # n, from the low mantissa bits of t
    k1 = k >> 1
    s1.i = (k1 + 127) << 23
    s2.i = (k - k1 + 127) << 23
    return p * s1.f * s2.f                 # NaN in, NaN out (through p)


@cython.cdivision(True)
cdef inline float fsigmoid(float x) noexcept nogil:
    """1 / (1 + exp(-x)) from e = exp(-|x|) <= 1: never overflows, keeps the tails."""
    cdef float e = fexp(-x if x >= <float>0 else x)
    cdef float r = <float>1 / (<float>1 + e)
    return r if x >= <float>0 else e * r


@cython.cdivision(True)
cdef inline float ftanh(float x) noexcept nogil:
    """Cephes' tanhf: an odd polynomial for |x| < 0.625 (where 1 - 2/(e**2x + 1) would
    cancel), 1 - 2 / (exp(2|x|) + 1) with x's sign beyond."""
    cdef float z = x if x >= <float>0 else -x
    cdef float z2 = x * x
    cdef float small = ((((<float>-5.70498872745e-3 * z2 + <float>2.06390887954e-2) * z2
                          - <float>5.37397155531e-2) * z2 + <float>1.33314422036e-1) * z2
                        - <float>3.33332819422e-1) * z2 * x + x
    cdef float big = <float>1 - <float>2 / (fexp(<float>2 * z) + <float>1)
    big = -big if x < <float>0 else big
    return small if z < <float>0.625 else big


@cython.cdivision(True)
cdef inline float fgelu(float x) noexcept nogil:
    """0.5 x erfc(-x / sqrt 2), erfc by Cephes' erfcf (single/ndtrf.c): 1 - a T(a**2) for
    |a| < 1, else exp(-a**2) / |a| times a polynomial in 1/a**2 (one for |a| < 2, one
    beyond), reflected as 2 - erfc(|a|) for a < 0. Both sides are computed and one selected,
    so loops over it vectorize.

    exp(-a**2) = exp(-x**2 / 2) is formed from the float32 x itself, x = xh + xl with xh's
    low 12 bits cleared: xh**2 is exact, so the exponent carries no rounding error (which
    exp would turn into a relative error of a**2 ulp in the tail)."""
    cdef float a = x * <float>-0.7071067811865476
    cdef float ax = a if a >= <float>0 else -a
    cdef float z2 = a * a
    cdef f32bits h
    h.f = x
    h.i = h.i & <int32_t>0xFFFFF000
    cdef float xl = x - h.f
    cdef float e = fexp(<float>-0.5 * h.f * h.f) * fexp(<float>-0.5 * xl * (x + h.f))
    e = e if x * x < <float>220 else <float>0        # erfc(a) < 1e-46 here; no inf * 0
    cdef float t = ((((((<float>7.853861353153693e-5 * z2 - <float>8.010193625184903e-4) * z2
                        + <float>5.188327685732524e-3) * z2 - <float>2.685381193529856e-2) * z2
                      + <float>1.128358514861418e-1) * z2 - <float>3.761262582423300e-1) * z2
                    + <float>1.128379165726710)
    cdef float small = <float>1 - a * t
    cdef float q = <float>1 / ax
    cdef float y = q * q
    cdef float p = ((((((((<float>2.326819970068386e-2 * y - <float>1.387039388740657e-1) * y
                          + <float>3.687424674597105e-1) * y - <float>5.824733027278666e-1) * y
                        + <float>6.210004621745983e-1) * y - <float>4.944515323274145e-1) * y
                      + <float>3.404879937665872e-1) * y - <float>2.741127028184656e-1) * y
                    + <float>5.638259427386472e-1)
    cdef float r = (((((((<float>-1.047766399936249e1 * y + <float>1.297719955372516e1) * y
                         - <float>7.495518717768503) * y + <float>2.921019019210786) * y
                       - <float>1.015265279202700) * y + <float>4.218463358204948e-1) * y
                     - <float>2.820767439740514e-1) * y + <float>5.641895067754075e-1)
    cdef float big = e * q * (p if ax < <float>2 else r)
    big = <float>2 - big if a < <float>0 else big
    return <float>0.5 * x * (small if ax < <float>1 else big)
