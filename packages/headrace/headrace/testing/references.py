"""Finding the NumPy references and input samples of the core's ops and the installed plugins'.

The core's own ops have theirs in ``headrace.core_ops.reference``; every installed plugin
distribution ``<pkg>`` (its entry point's top-level package) may have a ``<pkg>.reference``
package. Their modules define ``REFERENCES`` and ``SAMPLES`` dicts keyed by op type (see
docs/kernels.md). The hygiene and fuzz tests use them for every op at once.
"""
import importlib

from ..ops.package import iter_op_modules
from ..ops.plugins import discover

__all__ = ["load_references", "reference_packages"]

CORE_REFERENCES = "headrace.core_ops.reference"

_cache = None


def load_references():
    """``(references, samples)``: dicts op type -> function, over the core and every installed
    plugin."""
    global _cache
    if _cache is None:
        refs, samples = {}, {}
        for package in reference_packages():
            for module in iter_op_modules(package):
                refs.update(getattr(module, "REFERENCES", {}))
                samples.update(getattr(module, "SAMPLES", {}))
        _cache = refs, samples
    return _cache


def reference_packages():
    """The reference packages: the core's first, then each installed plugin's that has one."""
    found = [CORE_REFERENCES]
    for _, ep in discover():
        pkg = ep.value.split(":")[0].split(".")[0]
        try:
            importlib.import_module(f"{pkg}.reference")
        except ModuleNotFoundError:
            continue
        found.append(f"{pkg}.reference")
    return found
