# cython: language_level=3
"""print on the CPU: writes In (TensorPrinter decides whether this run prints and formats it)
and passes it on as Out with its LoD.

Out is In's array itself where the plan allows aliasing (neither side persistable): printing
must not cost a copy of every tensor a user wraps. Otherwise a copy, as Paddle's op makes one:
a persistable Out is updated in place later, which must not write into In.
"""
import numpy as np

from headrace.runtime.tensor import Tensor
from headrace.runtime.tensor_format import TensorPrinter

ALL_DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
              "float64", "complex64", "complex128")


cdef class Print:
    cdef object printer
    cdef bint alias

    def __init__(self, dict attrs, info=None):
        self.printer = TensorPrinter(attrs, info)
        self.alias = info is not None and info.may_alias("In", "Out")

    def __call__(self, x):
        if not isinstance(x.data, np.ndarray):
            raise TypeError(f"print: In must be a tensor, got {type(x.data).__name__}")
        if self.printer.wants_print():
            self.printer.write(x.data, x.lod)
        data = x.data if self.alias else np.array(x.data, copy=True)
        return (Tensor(data, [list(level) for level in x.lod]),)


KERNELS = [("print", Print, ALL_DTYPES, "lod")]
