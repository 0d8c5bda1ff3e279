"""``hr.cuda``: the CUDA caching allocator's counters, as ``torch.cuda`` has them.

The device module (and Numba) is imported only when one of these is called.
"""

__all__ = ["memory_allocated", "memory_reserved", "empty_cache"]


def _device():
    from .devices import cuda
    return cuda


def memory_allocated():
    """Bytes of device memory held by live arrays."""
    return _device().memory_allocated()


def memory_reserved():
    """Bytes held from the driver: live arrays plus blocks cached for reuse."""
    return _device().memory_reserved()


def empty_cache():
    """Return cached, unused device blocks to the driver."""
    _device().empty_cache()
