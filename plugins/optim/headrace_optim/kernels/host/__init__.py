"""Pure-Python host logic shared by this plugin's CPU (kernels/cpu/*.pyx) and CUDA
(kernels/cuda/*.py) kernels: the optimizers' attribute handling, one module per op family,
mirror-named with the kernel modules. It runs when a kernel is made, never per call."""
