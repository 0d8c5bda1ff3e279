"""assign (the core's assign op): a copy is an Identity."""
from ._common import unary

__all__ = ["EXPORTERS"]

EXPORTERS = {"assign": unary("Identity")}
