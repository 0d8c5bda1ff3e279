"""``hr.io.DataLoader``: Fluid's ``DataLoader.from_generator`` for headrace's Executor.

::

    loader = hr.io.DataLoader.from_generator(feed_list=[img, label], capacity=8)
    loader.set_sample_generator(hr.io.reader.shuffle(samples, 1000, seed=0), batch_size=32,
                                places=hr.CPUPlace())
    for epoch in range(10):
        for feed in loader():          # {"img": ..., "label": ...}
            exe.run(main, feed=feed, fetch_list=[loss])

Each pass runs the generator in a background thread that converts batches (checked against
the feed variables, LoD built for ``lod_level`` > 0, moved to the place) into a queue of
``capacity`` batches, so a step takes a ready batch without waiting whenever the reader keeps
up. Leaving a pass early (``break``, an exception in the loop) stops its thread; an exception
in the generator is raised in the loop with the generator's traceback.

Differences from Fluid, all because a headrace Executor runs one place: a batch is one feed
dict (Fluid yields a list with one dict per place), ``places`` names one place (default the
CPU), and ``iterable=False`` (a ``read`` op inside the program) is not supported.
"""
import itertools
import weakref

from ..errors import HeadraceError
from ..runtime.place import CPUPlace, Place
from . import reader as reader_mod
from .feeder import DataFeeder
from .prefetch import Prefetcher

__all__ = ["DataLoader", "DataLoaderError", "GeneratorLoader"]


class DataLoaderError(HeadraceError, ValueError):
    """A DataLoader used or configured wrongly (the data's own mismatches are FeedErrors)."""


def _flag(where, name, value):
    if not isinstance(value, bool):
        raise DataLoaderError(f"{where}: argument '{name}' must be a bool, got {value!r}")
    return value


class DataLoader:
    """Fluid's ``fluid.io.DataLoader`` entry point."""

    @staticmethod
    def from_generator(feed_list=None, capacity=None, use_double_buffer=True, iterable=True,
                       return_list=False, use_multiprocess=False, drop_last=True):
        """A loader for ``feed_list`` (the data Variables its batches feed) that keeps up to
        ``capacity`` batches ready. ``return_list``: yield a list of values in feed_list order
        instead of a feed dict. ``use_double_buffer`` and ``drop_last`` (Fluid: the batches
        that cannot be split over several places) change nothing with one place; they are
        accepted for Fluid's code. Set the data with one of the ``set_*_generator`` methods."""
        return GeneratorLoader(feed_list, capacity, use_double_buffer, iterable, return_list,
                               use_multiprocess, drop_last)


class GeneratorLoader:
    """The loader ``DataLoader.from_generator`` returns. Iterating it (or calling it) starts
    a pass over the data; ``reset()`` ends the pass in progress."""

    def __init__(self, feed_list, capacity, use_double_buffer=True, iterable=True,
                 return_list=False, use_multiprocess=False, drop_last=True):
        where = "DataLoader.from_generator"
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity <= 0:
            raise DataLoaderError(f"{where}: argument 'capacity' (the batches kept ready) must "
                                  f"be an int > 0, got {capacity!r}")
        if not _flag(where, "iterable", iterable):
            raise DataLoaderError(
                f"{where}: iterable=False (the program reads its batches with a read op) is "
                f"not supported: iterate the loader and pass each batch to Executor.run")
        if _flag(where, "use_multiprocess", use_multiprocess):
            raise DataLoaderError(f"{where}: use_multiprocess=True is not supported; the "
                                  f"reader runs in a background thread")
        _flag(where, "use_double_buffer", use_double_buffer)
        self.drop_last = _flag(where, "drop_last", drop_last)
        self.return_list = _flag(where, "return_list", return_list)
        self.capacity = capacity
        self._feed_list = feed_list
        self._feeder = DataFeeder(feed_list, where="DataLoader")  # checks feed_list now
        self._source = None     # () -> iterable of (values on the host, sample count)
        self._epoch = None      # weak reference to the pass in progress

    @property
    def feed_names(self):
        return list(self._feeder.feed_names)

    # -- data sources --------------------------------------------------------------------------

    def set_sample_generator(self, reader, batch_size, drop_last=True, places=None):
        """``reader()`` yields samples (a tuple with one field per feed variable); they are
        grouped into batches of ``batch_size``, the last shorter one dropped if
        ``drop_last``."""
        if not isinstance(drop_last, bool):
            raise DataLoaderError(f"set_sample_generator: argument 'drop_last' must be a bool, "
                                  f"got {drop_last!r}")
        batched = reader_mod.batch(reader, batch_size, drop_last=drop_last)
        return self.set_sample_list_generator(batched, places)

    def set_sample_list_generator(self, reader, places=None):
        """``reader()`` yields batches as lists of samples."""
        return self._set(reader, places, self._feeder.from_samples, "set_sample_list_generator")

    def set_batch_generator(self, reader, places=None):
        """``reader()`` yields batches: one array per feed variable (a list or tuple in
        feed_list order, or a dict by name); a Tensor with LoD, or a list of sequences, for a
        LoD variable."""
        return self._set(reader, places, self._feeder.from_batch, "set_batch_generator")

    def _set(self, reader, places, convert, where):
        if not callable(reader):
            raise DataLoaderError(f"{where}: the reader must be a callable returning an "
                                  f"iterable (a generator function), got {reader!r}"[:300])
        self._feeder.place = self._place(places, where)
        feeder = self._feeder

        def source():
            for n, batch in enumerate(reader()):
                values, count = convert(batch, n)
                yield feeder.to_place(values), count
        self.reset()
        self._source = source
        return self

    @staticmethod
    def _place(places, where):
        if isinstance(places, (list, tuple)):
            if len(places) != 1:
                raise DataLoaderError(
                    f"{where}: a headrace Executor runs on one place; places must name one, "
                    f"got {len(places)}: {list(places)!r}"[:300])
            places = places[0]
        if places is not None and not isinstance(places, Place):
            raise DataLoaderError(f"{where}: places must be a Place (hr.CPUPlace(), "
                                  f"hr.CUDAPlace(0)) or a list of one, got {places!r}"[:300])
        return places if places is not None else CPUPlace()

    # -- passes ----------------------------------------------------------------------------------

    def __iter__(self):
        if self._source is None:
            raise DataLoaderError("DataLoader: no data yet: call set_sample_generator, "
                                  "set_sample_list_generator or set_batch_generator first")
        self.reset()
        epoch = _Pass(self._source, self.capacity, self._feeder.feed_names, self.return_list)
        self._epoch = weakref.ref(epoch)
        return epoch

    def __call__(self):
        return iter(self)

    def reset(self):
        """End the pass in progress, if any (its thread stops)."""
        epoch = self._epoch() if self._epoch is not None else None
        if epoch is not None:
            epoch.close()
        self._epoch = None


_pass_ids = itertools.count()


class _Pass:
    """One pass over the data: batches as feed dicts (or lists). ``wait_seconds``: the time
    ``next`` spent waiting for the reader; ``last_count``: the samples in the last batch."""

    def __init__(self, source, capacity, names, return_list):
        self._names, self._return_list = names, return_list
        self._ahead = Prefetcher(source, capacity, name=f"headrace-dataloader-{next(_pass_ids)}")
        self.last_count = 0
        self.batches = 0

    def __iter__(self):
        return self

    def __next__(self):
        values, self.last_count = next(self._ahead)
        self.batches += 1
        return values if self._return_list else dict(zip(self._names, values))

    @property
    def wait_seconds(self):
        return self._ahead.wait_seconds

    def qsize(self):
        """Batches ready now."""
        return self._ahead.qsize()

    @property
    def thread(self):
        return self._ahead.thread

    def close(self):
        self._ahead.close()
