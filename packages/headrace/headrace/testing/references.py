"""Finding the NumPy references and input samples that plugins ship in ``<pkg>.reference``.

Every installed plugin distribution ``<pkg>`` (its entry point's top-level package) may have a
``<pkg>.reference`` package whose modules define ``REFERENCES`` and ``SAMPLES`` dicts keyed by
op type (see docs/kernels.md). The hygiene and fuzz tests use them for every op at once.
"""
import importlib

from ..ops.package import iter_op_modules
from ..ops.plugins import discover

__all__ = ["load_references"]

_cache = None


def load_references():
    """``(references, samples)``: dicts op type -> function, over every installed plugin."""
    global _cache
    if _cache is None:
        refs, samples = {}, {}
        for _, ep in discover():
            pkg = ep.value.split(":")[0].split(".")[0]
            try:
                importlib.import_module(f"{pkg}.reference")
            except ModuleNotFoundError:
                continue
            for module in iter_op_modules(f"{pkg}.reference"):
                refs.update(getattr(module, "REFERENCES", {}))
                samples.update(getattr(module, "SAMPLES", {}))
        _cache = refs, samples
    return _cache
