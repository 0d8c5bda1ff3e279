"""Batches for a program's feed variables, checked against each variable (Fluid's DataFeeder).

A *sample* is a tuple with one field per feed variable. For a variable with ``lod_level`` 0 a
field is one row of the variable (its shape without the batch dim; a field with the same
number of elements is reshaped, so a label ``3`` fills a ``[-1, 1]`` variable); the batch is
the rows stacked. For ``lod_level`` L > 0 a field is a sequence nested L deep whose innermost
items are rows; the batch is every sample's rows concatenated, with the LoD that says where
each (sub-)sequence starts. Values are converted to the variable's dtype within a kind
(float64 to float32, int32 to int64); anything else (floats for an int64 variable, ragged
lists, strings) is refused with an error that names the variable, the sample and its batch,
what the variable expects and what was found.
"""
import math

import numpy as np

from ..framework import Variable, default_main_program
from ..runtime.executor import FeedError
from ..runtime.place import CPUPlace, Place
from ..runtime.tensor import Tensor, check_lod, lengths_to_offsets

__all__ = ["DataFeeder", "FeedError"]


def feed_variables(feed_list, where, program=None):
    """The Variables of ``feed_list`` (Variables, or names in ``program``'s global block)."""
    if isinstance(feed_list, (Variable, str)) or not isinstance(feed_list, (list, tuple)) \
            or not feed_list:
        raise FeedError(f"{where}: feed_list must be a non-empty list of the data Variables "
                        f"(hr.layers.data) that batches feed, got {feed_list!r}"[:300])
    out = []
    for v in feed_list:
        if isinstance(v, str):
            block = (program or default_main_program()).global_block()
            if not block.has_var(v):
                raise FeedError(f"{where}: feed_list names '{v}', which is not a variable of "
                                f"the program's global block")
            v = block.var(v)
        if not isinstance(v, Variable):
            raise FeedError(f"{where}: feed_list items are Variables or names, got "
                            f"{type(v).__name__} {v!r}"[:300])
        if len(v.shape) == 0:
            raise FeedError(f"{where}: variable '{v.name}' has shape [] and no batch dim: "
                            f"declare it with hr.layers.data (which adds the batch dim)")
        out.append(v)
    names = [v.name for v in out]
    if len(set(names)) != len(names):
        raise FeedError(f"{where}: feed_list names a variable twice: {names}")
    return out


def _matches(found, want):
    return len(found) == len(want) and all(w < 0 or w == f for w, f in zip(want, found))


class _Column:
    """One feed variable: converts its field of each sample (or its part of a batch)."""

    def __init__(self, var, index, where):
        self.var, self.name, self.index, self.where = var, var.name, index, where
        self.lod_level = var.lod_level
        self.row = tuple(int(d) for d in var.shape[1:])
        self.known = all(d >= 0 for d in self.row)
        try:
            self.dtype = np.dtype(var.dtype)
        except TypeError:
            raise FeedError(f"{where}: variable '{var.name}' has dtype {var.dtype}, which "
                            f"NumPy cannot hold; feed it through Executor.run") from None

    def fail(self, at, what, expected, found):
        raise FeedError(f"{self.where}: variable '{self.name}' (field {self.index} of {at}) "
                        f"{what}\n  expected: {expected}\n  found:    {found}")

    def array(self, value, at):
        try:
            arr = np.asarray(value)
        except ValueError as e:   # ragged nested lists
            self.fail(at, "is ragged (its items differ in length or shape)",
                      f"{self.var.dtype} rows of shape {list(self.row)} (lod_level "
                      f"{self.lod_level})", f"{e}"[:200])
        # An empty list is float64 to NumPy: nothing to convert, so no dtype to refuse.
        if arr.dtype != self.dtype and arr.size and not (
                arr.dtype.kind in "biuf" and np.can_cast(arr.dtype, self.dtype, "same_kind")):
            kind = arr.dtype.kind
            self.fail(at, "has the wrong dtype", f"{self.dtype.name} (or a type that converts "
                      f"within its kind)", "text" if kind in "US" else
                      "ragged or mixed nested values" if kind == "O" else arr.dtype.name)
        return arr

    def rows(self, value, at, first):
        """``value`` as an array of rows (a batch's part, or a sequence's rows when ``first``
        is the row count's name)."""
        arr = self.array(value, at)
        if arr.ndim == 0:
            self.fail(at, "is not a sequence", f"a sequence of rows of shape {list(self.row)}",
                      f"a scalar {arr.dtype.name}")
        if _matches(arr.shape[1:], self.row):
            return arr
        if self.known and arr.size == arr.shape[0] * math.prod(self.row):
            return arr.reshape((arr.shape[0],) + self.row)
        self.fail(at, "has the wrong shape", f"[{first}] + {list(self.row)} (of the variable's "
                  f"{list(self.var.shape)}; -1 matches any size)", list(arr.shape))

    def dense(self, value, at):
        """One sample's row."""
        arr = self.array(value, at)
        if _matches(arr.shape, self.row):
            return arr
        if self.known and arr.size == math.prod(self.row):
            return arr.reshape(self.row)
        self.fail(at, "has the wrong shape", f"{list(self.row)} (one sample of the variable's "
                  f"{list(self.var.shape)}; -1 matches any size)", list(arr.shape))

    def nested(self, value, at, lengths, pieces):
        """One sample's sequence nested ``lod_level`` deep: rows into ``pieces``, each level's
        lengths into ``lengths``."""
        def walk(seq, depth):
            if depth == self.lod_level - 1:
                rows = self.rows(seq, at, "sequence length")
                lengths[depth].append(len(rows))
                pieces.append(rows)
                return
            if isinstance(seq, (str, bytes)) or not hasattr(seq, "__len__"):
                self.fail(at, f"is not nested {self.lod_level} deep (lod_level "
                          f"{self.lod_level})", f"a sequence at depth {depth + 1}",
                          f"{type(seq).__name__} {seq!r}"[:200])
            lengths[depth].append(len(seq))
            for sub in seq:
                walk(sub, depth + 1)
        walk(value, 0)

    def column(self, fields, at_batch):
        """This variable's batch from its field of each sample."""
        if self.lod_level:
            lengths, pieces = [[] for _ in range(self.lod_level)], []
            for k, field in enumerate(fields):
                self.nested(field, f"sample #{k} in {at_batch}", lengths, pieces)
            return self.stack((lengths, pieces), at_batch)
        whole = self._all_at_once(fields)
        if whole is not None:
            return whole
        return self.stack([self.dense(field, f"sample #{k} in {at_batch}")
                           for k, field in enumerate(fields)], at_batch)

    def _all_at_once(self, fields):
        """The rows as one array when they convert together by the rules of ``dense`` (one
        shape, a dtype of the variable's kind): one NumPy call instead of checks per sample.
        None sends them one by one, where the sample at fault is named."""
        try:
            arr = np.asarray(fields)
        except ValueError:
            return None
        if arr.dtype != self.dtype and not (
                arr.dtype.kind in "biuf" and np.can_cast(arr.dtype, self.dtype, "same_kind")):
            return None
        if not _matches(arr.shape[1:], self.row):
            if not (self.known and arr.size == len(fields) * math.prod(self.row)):
                return None
            arr = arr.reshape((len(fields),) + self.row)
        return arr.astype(self.dtype, copy=False)

    def stack(self, fields, at_batch):
        """The batch of this column from its samples' fields (already converted)."""
        if self.lod_level:
            lengths, pieces = fields
            rows = (self._joined(np.concatenate, pieces, at_batch, "sequence") if pieces else
                    np.zeros((0,) + tuple(max(d, 0) for d in self.row)))
            lod = [lengths_to_offsets(level) for level in lengths]
            check_lod(lod, rows.shape[0], f"variable '{self.name}'")
            return Tensor(rows.astype(self.dtype, copy=False), lod)
        return self._joined(np.stack, fields, at_batch, "sample").astype(self.dtype, copy=False)

    def _joined(self, join, parts, at_batch, what):
        """``join(parts)``; parts whose rows differ in shape (a -1 in the variable's row shape
        lets each sample choose) are named."""
        try:
            return join(parts)
        except ValueError:
            row = parts[0].shape[1:] if what == "sequence" else parts[0].shape
            odd = next(k for k, p in enumerate(parts)
                       if (p.shape[1:] if what == "sequence" else p.shape) != row)
            self.fail(f"{what} #{odd} in {at_batch}", f"differs in row shape from {what} #0 "
                      f"of its batch (the rows of one batch must share a shape)", list(row),
                      list(parts[odd].shape[1:] if what == "sequence" else parts[odd].shape))

    def batch_part(self, value, at):
        """This column's part of a batch from a batch generator."""
        if isinstance(value, Tensor):
            data, lod = value.data, value.lod
            if data.dtype != self.dtype:
                self.fail(at, "has the wrong dtype", self.dtype.name, np.dtype(data.dtype).name)
            if not _matches(data.shape, self.var.shape):
                self.fail(at, "has the wrong shape", f"{list(self.var.shape)} (-1 matches any "
                          f"size)", list(data.shape))
            check_lod(lod, data.shape[0], f"variable '{self.name}'")
            return value
        if self.lod_level and isinstance(value, (list, tuple)):   # one ragged field per sample
            lengths, pieces = [[] for _ in range(self.lod_level)], []
            for k, seq in enumerate(value):
                self.nested(seq, f"sample #{k} in {at}", lengths, pieces)
            return self.stack((lengths, pieces), at)
        return self.rows(value, at, "batch size").astype(self.dtype, copy=False)


def _count(value):
    if isinstance(value, Tensor):
        return len(value.lod[0]) - 1 if value.lod else value.data.shape[0]
    return value.shape[0]


class DataFeeder:
    """Fluid's DataFeeder: ``feed(samples)`` turns a list of samples into ``{name: value}`` for
    ``Executor.run``, on ``place``. The DataLoader converts its batches with one."""

    def __init__(self, feed_list, place=None, program=None, where="DataFeeder"):
        self.feed_vars = feed_variables(feed_list, where, program)
        self.feed_names = [v.name for v in self.feed_vars]
        if place is not None and not isinstance(place, Place):
            raise FeedError(f"{where}: place must be a Place (hr.CPUPlace(), "
                            f"hr.CUDAPlace(0)), got {place!r}"[:300])
        self.place = place if place is not None else CPUPlace()
        self.where = where
        self._columns = [_Column(v, i, where) for i, v in enumerate(self.feed_vars)]

    def feed(self, samples):
        values, _ = self.from_samples(samples)
        return dict(zip(self.feed_names, self.to_place(values)))

    def from_samples(self, samples, batch_no=0):
        """(values in feed order on the host, number of samples) of a list of samples."""
        at_batch = f"batch #{batch_no}"
        if not isinstance(samples, (list, tuple)) or not samples:
            raise FeedError(f"{self.where}: {at_batch} is not a non-empty list of samples: "
                            f"{type(samples).__name__} {samples!r}"[:300])
        n = len(self._columns)
        for k, sample in enumerate(samples):
            if not isinstance(sample, (list, tuple)) or len(sample) != n:
                raise FeedError(
                    f"{self.where}: sample #{k} in {at_batch} does not have one field per feed "
                    f"variable\n  expected: a tuple of {n} ({', '.join(self.feed_names)})\n"
                    f"  found:    {type(sample).__name__}"
                    + (f" of {len(sample)}" if isinstance(sample, (list, tuple)) else ""))
        return ([c.column(fields, at_batch) for c, fields in zip(self._columns, zip(*samples))],
                len(samples))

    def from_batch(self, batch, batch_no=0):
        """(values in feed order on the host, number of samples) of one batch from a batch
        generator: a list or tuple with one array (or Tensor, or for a LoD variable a list of
        sequences) per feed variable, or a dict by name."""
        at = f"batch #{batch_no}"
        if isinstance(batch, dict):
            missing = [k for k in self.feed_names if k not in batch]
            if missing:
                raise FeedError(f"{self.where}: {at} has no value for {missing}; it has "
                                f"{sorted(map(str, batch))}"[:300])
            batch = [batch[k] for k in self.feed_names]
        if not isinstance(batch, (list, tuple)) or len(batch) != len(self._columns):
            raise FeedError(
                f"{self.where}: {at} does not have one value per feed variable\n"
                f"  expected: a list of {len(self._columns)} ({', '.join(self.feed_names)})\n"
                f"  found:    {type(batch).__name__}"
                + (f" of {len(batch)}" if isinstance(batch, (list, tuple)) else ""))
        values = [c.batch_part(v, at) for c, v in zip(self._columns, batch)]
        return values, _count(values[0])

    def to_place(self, values):
        """Host values moved to this feeder's place (a Tensor keeps its LoD)."""
        module = self.place.module()
        out = []
        for v in values:
            if isinstance(v, Tensor):
                out.append(Tensor(module.to_device(np.ascontiguousarray(v.data), self.place)
                                  if isinstance(v.data, np.ndarray) else v.data, v.lod))
            else:
                out.append(module.to_device(np.ascontiguousarray(v), self.place))
        return out
