"""print on CUDA: In is copied to the host and written (TensorPrinter decides whether this run
prints and formats it), and passed on as Out with its LoD.

Out is In's device array itself where the plan allows aliasing (neither side persistable),
otherwise a device copy (a persistable Out is updated in place later, which must not write into
In). The host copy is made only for a run that prints: its transfer waits for the stream.
"""
import numpy as np

from headrace.kernels.cuda_launch import device_copy
from headrace.runtime.tensor import Tensor
from headrace.runtime.tensor_format import TensorPrinter

ALL_DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
              "float64", "complex64", "complex128")


class Print:
    def __init__(self, attrs, info=None):
        self.printer = TensorPrinter(attrs, info)
        self.alias = info is not None and info.may_alias("In", "Out")

    def __call__(self, x):
        data = x.data
        if not hasattr(data, "copy_to_host") or isinstance(data, np.ndarray):
            raise TypeError(f"print: In must be a device tensor, got {type(data).__name__}")
        if self.printer.wants_print():
            self.printer.write(data.copy_to_host(), x.lod)
        out = data if self.alias else device_copy(data)
        return (Tensor(out, [list(level) for level in x.lod]),)


KERNELS = [("print", Print, ALL_DTYPES, "lod")]
