"""Reverse-mode automatic differentiation of programs."""
from .backward import BackwardError, append_backward, gradients

__all__ = ["BackwardError", "append_backward", "gradients"]
