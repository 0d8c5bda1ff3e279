"""The caching device allocator's bookkeeping, kept free of Numba so it is tested without a GPU.

Like PyTorch's caching allocator: a freed block goes back to a pool keyed by its size class
instead of to the driver, and the next request of that class reuses it, so a steady-state
training step (the same shapes every step) allocates nothing new from the driver. The driver
calls are injected (``alloc(nbytes) -> handle``, ``free(handle)``), so the same logic serves
the EMM plugin in :mod:`headrace.devices.cuda` and the unit tests.
"""
import threading

__all__ = ["CachingPool", "size_class"]

# Requests are rounded up so nearby sizes share blocks: 512-byte steps up to 1 MiB (small
# tensors vary little), then powers of two split in four (bounded waste, < 25%).
_SMALL_STEP = 512
_SMALL_LIMIT = 1 << 20


def size_class(nbytes):
    """The block size a request of ``nbytes`` gets (0 bytes still takes one small block, as the
    driver cannot hand out an empty allocation)."""
    if nbytes < 0:
        raise ValueError(f"size_class: a negative size {nbytes}")
    if nbytes <= _SMALL_LIMIT:
        return max(_SMALL_STEP, -(-nbytes // _SMALL_STEP) * _SMALL_STEP)
    step = 1 << (nbytes.bit_length() - 3)   # a quarter of the enclosing power of two
    return -(-nbytes // step) * step


class CachingPool:
    """Size-class pools of device blocks. ``allocated``: bytes in blocks handed out;
    ``reserved``: bytes held from the driver (handed out plus cached); ``driver_allocs``:
    how many times the driver was asked (a steady state stops increasing it)."""

    def __init__(self, alloc, free):
        self._alloc = alloc
        self._free = free
        self._cache = {}        # size class -> [handle, ...] free blocks
        self._sizes = {}        # id(handle) -> size class of a block in use
        self._lock = threading.Lock()   # frees may come from finalizers on another thread
        self.allocated = 0
        self.reserved = 0
        self.driver_allocs = 0

    def malloc(self, nbytes):
        """A block of at least ``nbytes``: a cached one of its size class, else a new one (after
        releasing the cache once if the driver is out of memory)."""
        size = size_class(nbytes)
        with self._lock:
            blocks = self._cache.get(size)
            handle = blocks.pop() if blocks else None
        if handle is None:
            try:
                handle = self._alloc(size)
            except MemoryError:
                self.empty_cache()
                handle = self._alloc(size)
            with self._lock:
                self.reserved += size
                self.driver_allocs += 1
        with self._lock:
            self._sizes[id(handle)] = (size, handle)
            self.allocated += size
        return handle, size

    def release(self, handle):
        """Give ``handle`` back to its size class's pool (the driver keeps the memory)."""
        with self._lock:
            entry = self._sizes.pop(id(handle), None)
            if entry is None:
                raise ValueError("CachingPool.release: the block was not handed out by this pool")
            size = entry[0]
            self.allocated -= size
            self._cache.setdefault(size, []).append(handle)

    def empty_cache(self):
        """Return every cached (unused) block to the driver; blocks in use stay."""
        with self._lock:
            cache, self._cache = self._cache, {}
            for size, blocks in cache.items():
                self.reserved -= size * len(blocks)
        for blocks in cache.values():
            for handle in blocks:
                self._free(handle)

    @property
    def cached(self):
        """Bytes held in the pools, free for reuse."""
        return self.reserved - self.allocated
