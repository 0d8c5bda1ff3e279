# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""fused_conv2d_add_act: Output = act(conv2d(Input, Filter) + Bias + ResidualData).

The convolution is conv.pyx's Conv2D, which also applies the activation: on its direct
kernels (float32 NCHW) Bias and relu go into the kernel's store of each output, else
ResidualData and Bias prefill Output and relu runs in place over it; either way the unfused
relu's second tensor (read one, write another) is gone. Output is the kernel's own
last result again once the run has dropped it (``recycled``: steady-state inference allocates
no Output), handed to the conv to write into.
"""
cimport numpy as cnp
from cpython.object cimport PyObject
from headrace.kernels.common cimport contiguous, kept, recycled, shape_of

from ..host.conv import ConvAttrs
from .conv import Conv2D

cnp.import_array()

DTYPES = ("float32", "float64")


cdef class FusedConv2DAddAct:
    cdef object conv       # conv.pyx's Conv2D for these attributes
    cdef object attrs      # the host plan, for Output's shape (ConvAttrs keeps the last)
    cdef bint relu
    cdef object _out       # the last Output, written again when nothing else holds it

    def __init__(self, dict attrs, info=None):
        self.conv = Conv2D(attrs, info)
        self.attrs = ConvAttrs(attrs)
        self.relu = attrs["activation"] == "relu"

    def __call__(self, input, filter, bias, residual=None):
        if bias is None:
            raise ValueError("fused_conv2d_add_act: Bias is required (one value per output "
                             "channel)")
        cdef cnp.ndarray x = contiguous(input)
        cdef int t = cnp.PyArray_TYPE(x)
        if t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64:
            raise TypeError(f"fused_conv2d_add_act: Input must be float32 or float64, got "
                            f"{x.dtype}")
        oshape = self.attrs.geometry("fused_conv2d_add_act", shape_of(x),
                                     tuple(filter.shape)).oshape
        cdef cnp.ndarray out = recycled(<PyObject*>self._out, oshape, t)
        self._out = None     # a failing conv leaves no half-written Output behind
        self.conv(x, filter, bias, residual, into=out, relu=self.relu)
        self._out = kept(out)   # (None in a pooled run: common.kept)
        return (out, [])


KERNELS = [("fused_conv2d_add_act", FusedConv2DAddAct, DTYPES)]
