"""The core's own op plugin: the ops the core itself emits (feed/fetch, autodiff's seeds and
sums, regularizers' scales), so that the core works with any single plugin beside it."""
