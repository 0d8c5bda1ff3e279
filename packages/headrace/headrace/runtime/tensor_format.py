"""Tensors as text, in the layout of Paddle's TensorFormatter (what its ``print`` op writes and
what ``print(lod_tensor)`` shows in Fluid), so logs read the same in both frameworks::

    Variable: fc_0.tmp_1
      - message: after the first layer
      - lod: {{0, 2, 5}}
      - place: CPUPlace()
      - shape: [5, 3]
      - dtype: float32
      - data: [0.1 -2 3.5 ...]

Two deliberate differences: dtypes are headrace's names (``float32``, ``int64``; Paddle prints
C++ type names, ``float``, ``long``), and there is no ``layout`` line (headrace tensors carry
no layout, so printing one would state a fact that is not there). Numbers are written as C++'s
default ``ostream`` writes them (6 significant digits, ``%g``), so the data line matches
Paddle's text for the same values.

``print_stream()`` is where the print op writes: ``sys.stdout`` looked up at each call, so
``contextlib.redirect_stdout`` and pytest's ``capsys``/``capfd`` capture it.
"""
import sys
import threading

import numpy as np

__all__ = ["TensorPrinter", "format_tensor", "format_values", "write_block"]

_WRITE_LOCK = threading.Lock()  # one block at a time: two threads' prints never interleave


def format_values(flat, summarize):
    """The first ``summarize`` values of the 1-D array ``flat`` (all when -1), space-separated
    as Paddle writes them (floats ``%g``, bools 1/0)."""
    n = flat.size if summarize is None or summarize < 0 else min(int(summarize), flat.size)
    head = flat[:n]
    kind = head.dtype.kind
    if kind == "f":
        return " ".join(format(float(v), "g") for v in head)
    if kind == "b":
        return " ".join("1" if v else "0" for v in head)
    if kind in "iu":
        return " ".join(str(int(v)) for v in head)
    return " ".join(str(v) for v in head)


def format_tensor(host, lod=None, name=None, message=None, place=None, summarize=20,
                  print_lod=True, print_shape=True, print_dtype=True):
    """The text block for host array ``host`` with ``lod`` (list of offset lists); ``name``
    None or empty leaves out the Variable line, ``message`` empty the message line, ``place``
    (the place as text, ``CPUPlace()``) None the place line. Ends with a newline."""
    lines = []
    if name:
        lines.append(f"Variable: {name}")
    if message:
        lines.append(f"  - message: {message}")
    if print_lod:
        levels = "".join("{" + ", ".join(str(int(o)) for o in level) + "}"
                         for level in (lod or []))
        lines.append(f"  - lod: {{{levels}}}")
    if place is not None:
        lines.append(f"  - place: {place}")
    if print_shape:
        lines.append(f"  - shape: [{', '.join(str(int(d)) for d in host.shape)}]")
    if print_dtype:
        lines.append(f"  - dtype: {host.dtype.name}")
    lines.append(f"  - data: [{format_values(np.ravel(host), summarize)}]")
    return "\n".join(lines) + "\n"


def write_block(text):
    """Write ``text`` to the current ``sys.stdout`` in one piece and flush it (a print op's
    output must reach the log before a crash later in the run)."""
    with _WRITE_LOCK:
        out = sys.stdout
        out.write(text)
        out.flush()


class TensorPrinter:
    """What the print op's kernels (CPU and CUDA) share: whether this run prints (``print_phase``
    against ``is_forward``; ``first_n`` counts the runs that printed, as Paddle's op does) and
    the text. One per kernel instance, so each prepared op counts its own runs."""

    def __init__(self, attrs, info=None):
        self.attrs = attrs
        phase, forward = attrs.get("print_phase", "BOTH"), attrs.get("is_forward", True)
        self.active = phase == "BOTH" or (phase == "FORWARD") == bool(forward)
        self.first_n = int(attrs.get("first_n", -1))
        self.times = 0
        var = info.inputs.get("In", (None,))[0] if info is not None else None
        self.name = var.name if var is not None else "In"
        self.place = repr(info.place) if info is not None and info.place is not None else None
        self._lock = threading.Lock()

    def wants_print(self):
        """Whether this run prints (counts it when it does)."""
        if not self.active:
            return False
        with self._lock:
            if 0 < self.first_n <= self.times:
                return False
            self.times += 1
            return True

    def write(self, host, lod):
        a = self.attrs
        write_block(format_tensor(
            host, lod, name=self.name if a.get("print_tensor_name", True) else None,
            message=a.get("message", ""), place=self.place, summarize=a.get("summarize", 20),
            print_lod=a.get("print_tensor_lod", True),
            print_shape=a.get("print_tensor_shape", True),
            print_dtype=a.get("print_tensor_type", True)))
