"""A generator run ahead in a background thread, into a bounded queue: what the DataLoader and
the ``buffered`` reader decorator share.

The consumer's ``next`` takes a ready item without waiting whenever the queue holds one; the
thread stops at the end of the data, at the first exception (handed to the consumer, which
raises it with the producer's traceback), or when the consumer closes the iterator. Closing
also happens when the iterator is dropped (a ``for`` loop left by ``break``): the thread holds
no reference to the iterator, so dropping it runs the finalizer, which stops and joins the
thread; nothing is left blocked on a full queue.
"""
import logging
import queue
import threading
import time
import weakref

__all__ = ["Prefetcher"]

_log = logging.getLogger("headrace.io")

_ITEM, _END, _ERROR = "item", "end", "error"

# How long the producer blocks on a full queue before it looks at the stop flag again, and how
# long closing waits for a producer that is inside the user's generator (which cannot be
# interrupted from outside; the thread is a daemon, so it never holds up the interpreter's exit).
_PUT_POLL_S = 0.05
_JOIN_S = 10.0


def _put(q, stop, entry):
    """Put ``entry`` unless asked to stop first; True when it went in."""
    while not stop.is_set():
        try:
            q.put(entry, timeout=_PUT_POLL_S)
            return True
        except queue.Full:
            continue
    return False


def _produce(make, q, stop):
    """The thread's body. It refers to the queue and the flag only, never to the Prefetcher,
    so the consumer's iterator can be collected while the thread still runs."""
    try:
        gen = make()
        try:
            for item in gen:
                if stop.is_set() or not _put(q, stop, (_ITEM, item)):
                    return
        finally:
            close = getattr(gen, "close", None)
            if close is not None:   # run the generator's own finally blocks in its thread
                close()
    except BaseException as e:   # handed over, not lost in a thread nobody watches
        e.add_note("(raised in the data loader's reader thread; traceback above)")
        _put(q, stop, (_ERROR, e))
        return
    _put(q, stop, (_END, None))


def _shutdown(stop, q, thread):
    stop.set()
    while True:   # make room, so a producer blocked on put sees the flag at once
        try:
            q.get_nowait()
        except queue.Empty:
            break
    if thread is not threading.current_thread():
        thread.join(_JOIN_S)
        if thread.is_alive():
            _log.warning("the data loader's reader thread %s is still inside the reader "
                         "%.0f s after it was told to stop; it is a daemon thread and is "
                         "left to finish on its own", thread.name, _JOIN_S)


class Prefetcher:
    """Iterate ``make()`` (a callable returning an iterable) in a daemon thread that keeps up to
    ``capacity`` items ready. ``wait_seconds``: the consumer's total time blocked in ``next``.
    """

    def __init__(self, make, capacity, name="headrace-reader"):
        self._queue = queue.Queue(capacity)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=_produce, args=(make, self._queue, self._stop),
                                        name=name, daemon=True)
        self._finalizer = weakref.finalize(self, _shutdown, self._stop, self._queue,
                                           self._thread)
        # Not at interpreter exit: the daemon thread ends with the process, and a reader in
        # the middle of a slow item would otherwise hold up the exit for the join's timeout.
        self._finalizer.atexit = False
        self._done = False
        self.wait_seconds = 0.0
        self._thread.start()

    def __iter__(self):
        return self

    def __next__(self):
        if self._done:
            raise StopIteration
        t0 = time.perf_counter()
        kind, value = self._queue.get()
        self.wait_seconds += time.perf_counter() - t0
        if kind == _ITEM:
            return value
        self._done = True
        self.close()
        if kind == _ERROR:
            raise value
        raise StopIteration

    def qsize(self):
        """Items ready now (approximate while the thread runs)."""
        return self._queue.qsize()

    @property
    def thread(self):
        """The producer thread (for tests and diagnostics)."""
        return self._thread

    def close(self):
        """Stop the producer and wait for it to end; later ``next`` calls stop the iteration."""
        self._done = True
        self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
