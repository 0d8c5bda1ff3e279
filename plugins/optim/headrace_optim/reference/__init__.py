"""NumPy references and input samples of the optimizer update ops, one module per op module.

Each module lists ``REFERENCES`` (op type -> ``fn(inputs, attrs) -> {slot: expected}``) and
``SAMPLES`` (op type -> ``fn(rng, dtype) -> (inputs, attrs)``); see docs/kernels.md. The
updates are computed in the parameter's dtype, with 'float' attributes rounded to float32 as
the op stores them.
"""
