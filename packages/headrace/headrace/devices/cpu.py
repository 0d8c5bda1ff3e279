"""The CPU device: arrays are NumPy arrays."""
import numpy as np

__all__ = ["check_available", "to_device", "to_host", "is_array", "zeros_like", "add",
           "add_to"]


def check_available(place):
    """The CPU is always there."""


def to_device(array, place=None):
    return array


def to_host(value):
    return value


def is_array(value):
    return isinstance(value, np.ndarray)


def zeros_like(value):
    """A new zero array of ``value``'s shape and dtype (a gradient that nothing reached)."""
    return np.zeros_like(value)


def add(a, b):
    """A new array ``a + b`` (gradients accumulated across the steps of a loop)."""
    return np.add(a, b)


def add_to(acc, b):
    """``acc += b`` in place (``acc`` an array the caller made and owns)."""
    np.add(acc, b, out=acc)
