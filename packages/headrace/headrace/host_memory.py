"""``hr.host_memory``: the counters of headrace's host caching pool, as ``hr.cuda`` has the
device's (``runtime.host_memory`` says what the pool is and when runs use it).

With the pool off (``HEADRACE_HOST_POOL=0``) the byte counts are 0 and ``empty_cache`` does
nothing.
"""
from .runtime import host_memory as _hm

__all__ = ["memory_allocated", "memory_reserved", "max_memory_allocated", "memory_stats",
           "empty_cache", "set_cache_limit", "reset_peak_memory_stats"]


def memory_allocated():
    """Bytes of the pool's blocks held by live arrays (by block capacity)."""
    return memory_stats().get("allocated_bytes", 0)


def memory_reserved():
    """Bytes the pool holds from malloc: live arrays plus free blocks cached for reuse."""
    return memory_stats().get("reserved_bytes", 0)


def max_memory_allocated():
    """The peak of :func:`memory_allocated` since the start or the last
    :func:`reset_peak_memory_stats`."""
    return memory_stats().get("peak_allocated_bytes", 0)


def memory_stats():
    """All the pool's counters (``_host_pool.stats``), {} with the pool off."""
    pool = _hm.pool()
    return pool.stats() if pool is not None else {}


def empty_cache():
    """Return the cached free blocks to malloc."""
    pool = _hm.pool()
    if pool is not None:
        pool.trim(0)


def set_cache_limit(nbytes):
    """Cache at most ``nbytes`` of free blocks (``HEADRACE_HOST_POOL_MB`` sets it at start)."""
    pool = _hm.pool()
    if pool is not None:
        pool.set_limit(int(nbytes))


def reset_peak_memory_stats():
    pool = _hm.pool()
    if pool is not None:
        pool.reset_peak()
