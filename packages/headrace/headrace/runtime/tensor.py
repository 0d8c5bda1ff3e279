"""Tensors: data (a NumPy array on the CPU, a device array on a CUDA place) plus LoD.

LoD (level of detail) describes variable-length sequences packed along dim 0: each level is a
list of offsets, starting at 0 and non-decreasing; the last level's final offset equals the
number of rows, and each higher level's final offset equals the number of entries of the level
below. ``recursive_seq_lens`` is the same information as lengths.
"""
import numpy as np

from ..errors import HeadraceError
from .tensor_format import format_tensor

__all__ = ["Tensor", "TensorArray", "LoDError", "check_lod", "lengths_to_offsets",
           "offsets_to_lengths", "create_lod_tensor"]


class LoDError(HeadraceError):
    """A LoD that does not describe the tensor it is attached to."""


def lengths_to_offsets(lengths):
    out = [0]
    for n in lengths:
        out.append(out[-1] + int(n))
    return out


def offsets_to_lengths(offsets):
    return [b - a for a, b in zip(offsets[:-1], offsets[1:])]


def check_lod(lod, rows, name="tensor"):
    """Normalize ``lod`` (list of offset lists) and check it against ``rows``; return it."""
    lod = [[int(o) for o in level] for level in (lod or [])]
    for i, level in enumerate(lod):
        if not level or level[0] != 0:
            raise LoDError(f"{name}: LoD level {i} must start at offset 0, got {level[:3]}")
        if any(b < a for a, b in zip(level[:-1], level[1:])):
            raise LoDError(f"{name}: LoD level {i} offsets must not decrease: {level}")
        expected = rows if i == len(lod) - 1 else len(lod[i + 1]) - 1
        if level[-1] != expected:
            what = "rows" if i == len(lod) - 1 else f"entries of level {i + 1}"
            raise LoDError(f"{name}: LoD level {i} ends at {level[-1]}, expected {expected} "
                           f"({what})")
    return lod


class Tensor:
    """A value of a LOD_TENSOR variable: ``data`` and ``lod``."""
    __slots__ = ("data", "lod")

    def __init__(self, data, lod=None):
        self.data = data
        self.lod = lod or []

    @property
    def shape(self):
        return tuple(self.data.shape)

    @property
    def dtype(self):
        return np.dtype(self.data.dtype).name

    def recursive_sequence_lengths(self):
        return [offsets_to_lengths(level) for level in self.lod]

    def numpy(self):
        """The data as a host NumPy array."""
        if isinstance(self.data, np.ndarray):
            return self.data
        return self.data.copy_to_host()

    __array__ = lambda self, dtype=None, copy=None: (  # noqa: E731 - np.asarray(tensor)
        self.numpy() if dtype is None else self.numpy().astype(dtype))

    def __repr__(self):
        lod = f", lod={self.lod}" if self.lod else ""
        return f"Tensor(shape={list(self.shape)}, dtype={self.dtype}{lod})"

    def __str__(self):
        """Paddle's text of a LoDTensor (``print(t)`` in Fluid): LoD, place, shape, dtype and
        the first 20 values (``headrace.runtime.tensor_format``)."""
        on_host = isinstance(self.data, np.ndarray)
        return format_tensor(self.numpy(), self.lod, place="CPUPlace()" if on_host else None)


class TensorArray(list):
    """A value of a LOD_TENSOR_ARRAY variable: a list of Tensors."""

    def __repr__(self):
        return f"TensorArray({list.__repr__(self)})"


def create_lod_tensor(data, recursive_seq_lens, place=None):
    """A Tensor from ``data`` and sequence lengths per level (Fluid's create_lod_tensor)."""
    data = np.asarray(data)
    lod = check_lod([lengths_to_offsets(l) for l in recursive_seq_lens], data.shape[0]
                    if data.ndim else 0)
    if place is not None:
        data = place.module().to_device(data, place)
    return Tensor(data, lod)
