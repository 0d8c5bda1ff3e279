"""Reader decorators, in PaddlePaddle's ``paddle.reader`` names and semantics.

A *reader* is a callable with no arguments that returns an iterable of samples (usually a
generator function); each decorator takes readers and returns a new reader, so a pipeline is
built once and each call of the result starts a fresh pass over the data (one epoch)::

    train = hr.io.reader.shuffle(samples, buf_size=1000, seed=0)
    loader.set_sample_generator(train, batch_size=32)

``shuffle`` takes an optional ``seed`` (Paddle's uses the global ``random`` module): the
decorated reader owns one generator seeded once, so its passes differ from each other and the
whole sequence of passes is the same for the same seed. ``from_arrays`` (not in Paddle) is the
reader of samples held in arrays.
"""
import itertools
import random
from concurrent.futures import ThreadPoolExecutor

from ..errors import HeadraceError
from .prefetch import Prefetcher

__all__ = ["ComposeNotAligned", "batch", "buffered", "cache", "chain", "compose", "firstn",
           "from_arrays", "map_readers", "shuffle", "xmap_readers"]


class ComposeNotAligned(HeadraceError, ValueError):
    """``compose`` readers that ran out at different samples (with ``check_alignment``)."""


def _positive_int(fn, arg, value):
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise HeadraceError(f"{fn}: argument '{arg}' must be an int > 0, got {value!r}")
    return value


def _callable(fn, reader):
    if not callable(reader):
        raise HeadraceError(f"{fn}: a reader is a callable returning an iterable (a generator "
                            f"function), got {type(reader).__name__} {reader!r}"[:300])
    return reader


def from_arrays(*columns):
    """The reader of the samples ``(columns[0][i], columns[1][i], ...)``: rows of arrays of
    one length (NumPy arrays, lists), e.g. ``from_arrays(images, labels)``."""
    lengths = {len(c) for c in columns}
    if not columns or len(lengths) != 1:
        raise HeadraceError(f"from_arrays: expected one or more columns of one length, got "
                            f"lengths {[len(c) for c in columns]}")

    def array_reader():
        return zip(*columns)
    return array_reader


def batch(reader, batch_size, drop_last=False):
    """A reader of lists of ``batch_size`` samples; the last, shorter list is kept unless
    ``drop_last``."""
    _callable("batch", reader)
    _positive_int("batch", "batch_size", batch_size)

    def batch_reader():
        items = []
        for sample in reader():
            items.append(sample)
            if len(items) == batch_size:
                yield items
                items = []
        if items and not drop_last:
            yield items
    return batch_reader


def shuffle(reader, buf_size, seed=None):
    """Shuffle within windows of ``buf_size`` samples: fill a buffer, shuffle it, yield it
    whole; the rest at the end likewise. ``buf_size`` at least the data's length shuffles
    everything. ``seed``: None draws from the ``random`` module's global generator; an int
    seeds this reader's own generator once, so each pass is a new order and the sequence of
    passes repeats for the same seed."""
    _callable("shuffle", reader)
    _positive_int("shuffle", "buf_size", buf_size)
    rng = random if seed is None else random.Random(seed)

    def shuffled_reader():
        buf = []
        for sample in reader():
            buf.append(sample)
            if len(buf) >= buf_size:
                rng.shuffle(buf)
                yield from buf
                buf = []
        if buf:
            rng.shuffle(buf)
            yield from buf
    return shuffled_reader


def buffered(reader, size):
    """Read ahead up to ``size`` samples in a background thread. The reader's exceptions are
    raised in the consumer; leaving the loop early stops the thread."""
    _callable("buffered", reader)
    _positive_int("buffered", "size", size)

    def buffered_reader():
        with Prefetcher(reader, size, name="headrace-buffered") as ahead:
            yield from ahead
    return buffered_reader


def cache(reader):
    """Read everything once, at decoration, and serve every pass from memory."""
    samples = list(_callable("cache", reader)())

    def cached_reader():
        yield from samples
    return cached_reader


def chain(*readers):
    """The samples of each reader in turn."""
    for r in readers:
        _callable("chain", r)

    def chained_reader():
        return itertools.chain.from_iterable(r() for r in readers)
    return chained_reader


def compose(*readers, check_alignment=True):
    """One sample of each reader side by side, flattened into a tuple: readers of (a, b) and c
    give (a, b, c). With ``check_alignment``, readers that end at different places raise
    ComposeNotAligned; without it, the shortest ends the pass."""
    for r in readers:
        _callable("compose", r)

    def as_tuple(x):
        return x if isinstance(x, tuple) else (x,)

    def composed_reader():
        its = [r() for r in readers]
        if not check_alignment:
            for outputs in zip(*its):
                yield sum(map(as_tuple, outputs), ())
            return
        end = object()
        for n, outputs in enumerate(itertools.zip_longest(*its, fillvalue=end)):
            if any(o is end for o in outputs):
                ended = [i for i, o in enumerate(outputs) if o is end]
                raise ComposeNotAligned(
                    f"compose: reader(s) {ended} of {len(readers)} ended after {n} samples "
                    f"while the others went on (pass check_alignment=False to stop at the "
                    f"shortest)")
            yield sum(map(as_tuple, outputs), ())
    return composed_reader


def map_readers(func, *readers):
    """``func`` applied to one sample of each reader at a time (ends with the shortest)."""
    if not callable(func):
        raise HeadraceError(f"map_readers: 'func' must be callable, got {func!r}"[:300])
    for r in readers:
        _callable("map_readers", r)

    def mapped_reader():
        yield from map(func, *(r() for r in readers))
    return mapped_reader


def firstn(reader, n):
    """The first ``n`` samples of each pass."""
    _callable("firstn", reader)
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise HeadraceError(f"firstn: argument 'n' must be an int >= 0, got {n!r}")

    def firstn_reader():
        yield from itertools.islice(reader(), n)
    return firstn_reader


def xmap_readers(mapper, reader, process_num, buffer_size, order=False):
    """``mapper`` applied to each sample by ``process_num`` threads, up to ``buffer_size``
    samples in flight. The results always come in the reader's order (Paddle's ``order=False``
    allows any order; keeping it costs nothing here). Threads help a mapper that releases the
    GIL (I/O, NumPy, decoding); a pure-Python mapper gains nothing."""
    if not callable(mapper):
        raise HeadraceError(f"xmap_readers: 'mapper' must be callable, got {mapper!r}"[:300])
    _callable("xmap_readers", reader)
    _positive_int("xmap_readers", "process_num", process_num)
    _positive_int("xmap_readers", "buffer_size", buffer_size)
    del order   # accepted for Paddle's signature; see above

    def xmap_reader():
        with ThreadPoolExecutor(process_num, thread_name_prefix="headrace-xmap") as pool:
            pending = []
            try:
                for sample in reader():
                    pending.append(pool.submit(mapper, sample))
                    if len(pending) >= buffer_size:
                        yield pending.pop(0).result()
                while pending:
                    yield pending.pop(0).result()
            finally:
                for f in pending:   # an early exit: drop the work not started yet
                    f.cancel()
    return xmap_reader
