"""Shared Cython declarations for kernel authors: ``from headrace.kernels.common cimport ...``.

common.pxd holds the inline helpers every CPU kernel module needs (contiguous views, output
allocation, shapes, dtype codes). They are inline, so cimporting them costs nothing at run
time. Plugins in this repository build against the source tree (their setup.py adds
packages/headrace to Cython's include path); others build against the installed core.
"""
