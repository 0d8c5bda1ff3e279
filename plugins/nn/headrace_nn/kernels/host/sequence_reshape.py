"""sequence_reshape's host logic, one copy for kernels/cpu/sequence_reshape.pyx and
kernels/cuda/sequence_reshape.py: X's layout checks (Paddle's: 2-D, one LoD level ending at
its rows), new_dim, and Out's LoD (each sequence's values in rows of new_dim)."""
import numpy as np

__all__ = ["check_layout", "ReshapedLoD"]


def check_layout(shape, lod, op):
    """Refuse an X of ``shape`` and ``lod`` that is not one 2-D level of sequences."""
    if len(shape) != 2:
        raise ValueError(f"{op}: X must be a 2-D sequence batch [rows, width], found shape "
                         f"{list(shape)}")
    if len(lod) != 1:
        raise ValueError(f"{op}: X must have one LoD level (Paddle's sequence_reshape takes "
                         f"only one), found {len(lod)}")
    off = lod[0]
    if len(off) < 1 or off[0] != 0 or off[len(off) - 1] != shape[0]:
        raise ValueError(f"{op}: X's LoD {list(off)} does not describe its {shape[0]} rows")


class ReshapedLoD:
    """new_dim, checked; called with X's offsets and width, Out's LoD (kept for the last
    offsets seen, as a kernel sees one batch layout step after step)."""

    def __init__(self, attrs):
        self.new_dim = attrs["new_dim"]
        if self.new_dim < 1:
            raise ValueError(f"sequence_reshape: new_dim must be >= 1, got {self.new_dim}")
        self._key = self._lod = None

    def __call__(self, off, width):
        if width == self.new_dim:
            return [list(off)]
        key = (tuple(off), width)
        if key != self._key:
            self._lod = [self._offsets(key[0], width)]
            self._key = key
        return [list(self._lod[0])]       # a list of the Tensor's own, as the CPU's was

    def _offsets(self, off, width):
        """Each sequence's length in rows of new_dim; the error names the first sequence
        whose values do not fill whole rows."""
        new_dim = self.new_dim
        lengths = np.diff(np.asarray(off, np.int64))
        for i in np.nonzero((lengths < 0) | ((lengths * width) % new_dim != 0))[0][:1]:
            if lengths[i] < 0:
                raise ValueError(f"sequence_reshape: X's LoD offsets decrease at sequence {i}")
            raise ValueError(f"sequence_reshape: sequence {i} of X has {lengths[i]} rows of "
                             f"width {width} = {lengths[i] * width} values, which do not "
                             f"divide by new_dim {new_dim}")
        return [0] + np.cumsum(lengths * width // new_dim).tolist()
