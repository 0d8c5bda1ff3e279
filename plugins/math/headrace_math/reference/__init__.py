"""NumPy oracles and input samplers of the math ops, one module per op family.

Each module lists ``REFERENCES = {op_type: fn(inputs, attrs) -> {slot: array}}`` and
``SAMPLES = {op_type: fn(rng, dtype) -> (inputs, attrs)}``. The implementations are
independent of headrace: plain NumPy (and scipy.special for erfc), computing in float64 and
rounding to the input dtype once, so they are the accurate answer the kernels are held to.
References receive only the attributes a test passes and fill in the ops' defaults.
"""
import importlib

MODULES = ("activation", "clip", "compare", "cumsum", "elementwise", "fc", "logical",
           "matmul", "reduce")

__all__ = ["MODULES", "all_references", "all_samples"]


def _merged(name):
    merged = {}
    for m in MODULES:
        merged.update(getattr(importlib.import_module(f"{__name__}.{m}"), name))
    return merged


def all_references():
    """``{op_type: reference}`` over every module."""
    return _merged("REFERENCES")


def all_samples():
    """``{op_type: sampler}`` over every module."""
    return _merged("SAMPLES")
