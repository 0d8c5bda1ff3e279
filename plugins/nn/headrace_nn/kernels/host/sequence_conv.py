"""sequence_conv's host checks, one copy for kernels/cpu/sequence_conv.pyx and
kernels/cuda/sequence_conv.py: the context window's attributes (checked as the op's shape rule
checks them: a kernel may be built without the rule, by tools and tests) and X's offsets."""
import numpy as np

__all__ = ["ContextWindow", "GRADS", "one_level", "x_offsets"]

# sequence_conv_grad's outputs, in its kernels' order.
GRADS = ("X@GRAD", "PaddingData@GRAD", "Filter@GRAD")


class ContextWindow:
    """contextStart / contextLength / paddingTrainable of ``op``, checked; ``up`` and ``down``
    are the PaddingData rows before and after a sequence."""

    def __init__(self, attrs, op):
        self.op = op
        self.start = attrs.get("contextStart", 0)
        self.length = attrs["contextLength"]
        self.trainable = attrs.get("paddingTrainable", False)
        if attrs.get("contextStride", 1) != 1:
            raise ValueError(f"{op}: contextStride must be 1 (only 1 is supported), found "
                             f"{attrs['contextStride']}")
        if self.length < 1 or self.start + self.length < 1:
            raise ValueError(f"{op}: contextLength must be >= 1 and the window must reach "
                             f"its row (contextStart + contextLength >= 1); found "
                             f"contextStart {self.start}, contextLength {self.length}")
        if self.trainable and self.start == 0 and self.length == 1:
            raise ValueError(f"{op}: paddingTrainable with contextStart 0 and contextLength "
                             f"1 has no padding to train")
        self.up = max(0, -self.start)
        self.down = max(0, self.start + self.length - 1)


def one_level(lod, op):
    """Refuse an X whose LoD is not exactly one level (checked before X's data)."""
    if not lod or len(lod) != 1:
        raise ValueError(f"{op}: X must be a batch of sequences with exactly one LoD level "
                         f"(as Paddle's); found {len(lod) if lod else 0} levels")


def x_offsets(lod, rows, op):
    """X's one LoD level as contiguous int64 offsets, checked: starting at 0, never
    decreasing, ending at X's ``rows``."""
    off = np.ascontiguousarray(np.asarray(lod[0], np.int64).reshape(-1))
    if off.size < 1 or off[0] != 0 or off[off.size - 1] != rows or (np.diff(off) < 0).any():
        raise ValueError(f"{op}: X's LoD {list(lod[0])} must start at 0, not decrease, and "
                         f"end at X's {rows} rows")
    return off
