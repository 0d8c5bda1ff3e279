"""select_input / select_output and select_input's gradient in NumPy, for the tests.

Frame ops: the hygiene harness does not run them from REFERENCES (see tests/test_hygiene.py);
plugins/control/tests/test_select.py compares the kernels with these. A candidate without a
value is None."""
import numpy as np


def _branch(mask, n):
    m = np.asarray(mask).reshape(-1)
    if m.size != 1 or not 0 <= int(m[0]) < n:
        raise IndexError(f"Mask must pick one of the {n} candidates, found {m.tolist()}")
    return int(m[0])


def select_input(xs, mask):
    """Out = X[Mask]."""
    return xs[_branch(mask, len(xs))]


def select_output(x, mask, outs):
    """Out[Mask] = X; the other outputs as they were (``outs``, None for no value)."""
    outs = list(outs)
    outs[_branch(mask, len(outs))] = x
    return outs


def select_input_grad(xs, mask, out_grad):
    """X@GRAD[Mask] = Out@GRAD; zeros like X[k] elsewhere, None where X[k] is None."""
    m = _branch(mask, len(xs))
    return [np.asarray(out_grad) if k == m else (None if x is None else np.zeros_like(x))
            for k, x in enumerate(xs)]
