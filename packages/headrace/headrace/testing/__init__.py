"""Helpers for op plugin authors' tests (build-time now; the OpTest harness grows here)."""
from .build import build_op, infer_shapes

__all__ = ["build_op", "infer_shapes"]
