"""NumPy references and input samples of the control family (see docs/kernels.md)."""
