"""CUDA kernels of the distributed ops: the CPU kernels staged through host memory."""
