# Helpers of this plugin's CPU kernels; the ones every plugin shares are in
# headrace/kernels/common.pxd (cimported from the core).
cimport numpy as cnp
from headrace.kernels.common cimport empty, kept, recycled, typenum  # recycled, kept: importable here


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


