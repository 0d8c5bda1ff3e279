"""Pure-Python host logic shared by the core ops' CPU (kernels/cpu/*.pyx) and CUDA
(kernels/cuda/*.py) kernels: attribute handling and shape checks, one module per op family,
mirror-named with the kernel modules. Nothing here touches tensor data."""
