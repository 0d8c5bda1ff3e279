"""Kernels of the core's own ops, one package per device."""
