"""NumPy oracles of the nn ops, one module per op family (the names of ``ops/``).

Each module has ``REFERENCES = {op_type: fn(inputs, attrs) -> {slot: array}}`` and
``SAMPLES = {op_type: fn(rng, dtype) -> (inputs, attrs)}``. The references are written
independently of the kernels (direct loops and plain NumPy, float64 arithmetic); attributes not
given take the definition's defaults. Use :func:`all_references` / :func:`all_samples` to
collect them.
"""
import importlib
import pkgutil

__all__ = ["all_references", "all_samples"]


def _modules():
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            yield importlib.import_module(f"{__name__}.{info.name}")


def all_references():
    """``{op_type: reference}`` over every module."""
    return {k: v for m in _modules() for k, v in getattr(m, "REFERENCES", {}).items()}


def all_samples():
    """``{op_type: sampler}`` over every module."""
    return {k: v for m in _modules() for k, v in getattr(m, "SAMPLES", {}).items()}
