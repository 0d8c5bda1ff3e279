"""NumPy references and input samples of the core's ops, one module per op module.

Each module lists ``REFERENCES`` (op type -> ``fn(inputs, attrs) -> {slot: expected}``) and
``SAMPLES`` (op type -> ``fn(rng, dtype) -> (inputs, attrs)``); see docs/kernels.md. The
references are written from the op definitions with plain NumPy, independently of the kernels.
feed and fetch have none: the executor interprets them (``no_kernel``).
"""
