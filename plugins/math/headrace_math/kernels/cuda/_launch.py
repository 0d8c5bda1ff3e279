"""Launch geometry shared by this plugin's CUDA kernels."""
THREADS = 256


def grid(n):
    """(blocks, threads) covering ``n`` elements with one thread each (at least one block)."""
    return max(1, (n + THREADS - 1) // THREADS), THREADS
