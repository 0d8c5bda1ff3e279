"""logical_* (headrace_math's logical family): NumPy broadcasting, as ONNX's."""
from ._common import unary
from .elementwise import binary

__all__ = ["EXPORTERS"]

EXPORTERS = {"logical_and": binary("And"), "logical_or": binary("Or"),
             "logical_xor": binary("Xor"), "logical_not": unary("Not")}
