"""Pure-Python host logic shared by this plugin's CPU (kernels/cpu/*.pyx) and CUDA
(kernels/cuda/*.py) kernels: shape plans and attribute handling, one module per op family,
mirror-named with the kernel modules. Nothing here touches tensor data; the kernels cache what
they compute here per input shape, so these run once per shape, not once per call."""
