"""Python CPU kernels (MPI calls through mpi4py); each module lists ``KERNELS``."""
