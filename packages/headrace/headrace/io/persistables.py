"""Saving and loading variables' values: Fluid's save_vars / load_vars and their shorthands.

Values live in a Scope as :class:`~headrace.runtime.Tensor` (data + LoD). On disk each variable
is one tensor stream (see :mod:`.tensor_stream`), either in its own file ``dirname/<name>`` or,
with ``filename``, all in one "combined" file: streams back to back, no names, in the order of
the variables' names sorted as strings (Paddle's ``__params__`` / ``.pdiparams`` layout). The
loader of a combined file rebuilds that order from the program, so a save and a load must
select the same variables; both use the same predicates here.

Saves are all-or-nothing (see :mod:`.checkpoint`): every value is fetched and checked before
any file is written, and the new files become visible together, with a manifest of their sizes
and hashes that loads check.
Loads read and check every file before any value enters the scope, so a failed load leaves the
scope unchanged.
"""
import os

import numpy as np

from .. import dtypes
from ..errors import HeadraceError
from ..framework import Parameter, Program, Variable, default_main_program
from ..runtime.scope import global_scope
from ..runtime.tensor import Tensor
from .checkpoint import DirectorySave, read_manifest, read_member
from .tensor_stream import ModelFileError, decode_tensor, memory_stream, read_tensor, \
    write_tensor

__all__ = ["is_parameter", "is_persistable", "select_vars", "gather_values", "write_values",
           "save_vars", "save_params", "save_persistables",
           "load_vars", "load_params", "load_persistables"]

# Kinds whose persistable variables hold no saved data (Fluid's is_persistable excludes them;
# RAW is skipped by Fluid's save_vars/load_vars).
_NOT_SAVED = ("feed_minibatch", "fetch_list", "reader", "raw")


def is_persistable(var):
    """A persistable variable that has a value worth saving (feed/fetch holders excluded)."""
    return var.persistable and var.kind not in _NOT_SAVED


def is_parameter(var):
    return isinstance(var, Parameter) or bool(var.desc.is_parameter)


def select_vars(main_program, vars, predicate):
    """The variables to save or load: ``vars`` (Variables or names), or those of
    ``main_program`` (every block, first declaration of a name wins) that ``predicate``
    accepts. Without either, the persistable ones: temporaries have nothing to keep."""
    program = main_program if main_program is not None else default_main_program()
    if not isinstance(program, Program):
        raise HeadraceError(f"main_program must be a Program, got {type(program).__name__}")
    by_name = {}
    for v in program.list_vars():
        by_name.setdefault(v.name, v)
    if vars is None:
        predicate = predicate or is_persistable
        selected = [v for v in by_name.values() if predicate(v)]
    else:
        selected = []
        for v in ([vars] if isinstance(vars, (Variable, str)) else vars):
            if isinstance(v, str):
                if v not in by_name:
                    raise HeadraceError(f"variable '{v}' is not a variable of the program")
                v = by_name[v]
            elif not isinstance(v, Variable):
                raise HeadraceError(f"vars takes Variables or names, got {type(v).__name__}")
            selected.append(v)
    for v in selected:
        if v.kind != "lod_tensor":
            raise HeadraceError(f"cannot save or load variable '{v.name}' of kind {v.kind}: "
                                f"only lod_tensor variables have a tensor-stream format")
    names = [v.name for v in selected]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise HeadraceError(f"variables selected twice: {', '.join(dup)}")
    return selected


def _device(executor):
    """The device module of the executor's place (None: host arrays, no conversion)."""
    return executor.place.module() if executor is not None else None


def _host_value(scope, var, device):
    value = scope.find(var.name)
    if value is None:
        raise HeadraceError(f"variable '{var.name}' has no value in the scope: run the startup "
                            f"program (or load the variable) before saving it")
    if isinstance(value, Tensor):
        data, lod = value.data, value.lod
    elif isinstance(value, np.ndarray):
        data, lod = value, []
    else:
        raise HeadraceError(f"variable '{var.name}' holds a {type(value).__name__} in the "
                            f"scope; only tensors can be saved")
    if not isinstance(data, np.ndarray) and device is not None:
        data = device.to_host(data)
    if not isinstance(data, np.ndarray) and hasattr(data, "copy_to_host"):
        data = data.copy_to_host()  # a device array, though the executor's place is the CPU
    if not isinstance(data, np.ndarray):
        raise HeadraceError(f"variable '{var.name}': its tensor holds a "
                            f"{type(data).__name__}, not an array that can be saved")
    return data, lod


def gather_values(executor, selected, scope):
    """``[(var, host array, lod)]`` for ``selected`` sorted by name (the combined file's
    order). Every value is fetched now, so a missing one fails before any file is written."""
    scope = scope if scope is not None else global_scope()
    device = _device(executor)
    return [(v, *_host_value(scope, v, device)) for v in sorted(selected, key=lambda v: v.name)]


def write_values(save, values, filename=None):
    """Write gathered ``values`` through the :class:`DirectorySave` ``save``: one file per
    variable, or all streams back to back in the member ``filename``."""
    if filename is not None:
        f = save.open(filename, f"the combined file '{filename}'")
        for var, data, lod in values:
            write_tensor(f, data, lod, f"variable '{var.name}'")
        return
    for var, data, lod in values:
        write_tensor(save.open(var.name, f"variable '{var.name}'"), data, lod,
                     f"variable '{var.name}'")


def save_vars(executor, dirname, main_program=None, vars=None, predicate=None, filename=None,
              scope=None):
    """Save variables' values from ``scope`` (default: the global scope) under ``dirname``:
    one file per variable (``dirname/<name>``), or all in the combined file ``filename``.
    Returns the names saved, in file order."""
    values = gather_values(executor, select_vars(main_program, vars, predicate), scope)
    with DirectorySave(dirname) as save:
        write_values(save, values, filename)
    return [v.name for v, _, _ in values]


def _check_matches(var, array, path):
    """A loaded tensor must fit its variable's declaration: a mismatch means the file belongs
    to another program (or, in a combined file, the variables are misaligned)."""
    shape = var.shape
    ok_shape = len(shape) == array.ndim and all(d < 0 or d == s for d, s in
                                                zip(shape, array.shape))
    try:
        ok_dtype = dtypes.to_numpy(var.dtype) == array.dtype
    except HeadraceError:  # a declared type with no NumPy dtype (bfloat16) never matches
        ok_dtype = False
    if not ok_dtype or not ok_shape:
        raise ModelFileError(f"the value for variable '{var.name}' does not match its "
                             f"declaration in the program", path,
                             expected=f"{var.dtype}{list(shape)}",
                             found=f"{array.dtype.name}{list(array.shape)}")


def load_vars(executor, dirname, main_program=None, vars=None, predicate=None, filename=None,
              scope=None):
    """Load variables' values into ``scope`` (default: the global scope) from ``dirname``,
    as :func:`save_vars` wrote them. Returns the names loaded."""
    scope = scope if scope is not None else global_scope()
    selected = sorted(select_vars(main_program, vars, predicate), key=lambda v: v.name)
    loaded = []
    manifest = read_manifest(dirname) if os.path.isdir(dirname) else {}
    if filename is not None:
        path = os.path.join(dirname, filename)
        data = read_member(dirname, filename, f"the combined file '{filename}'", manifest)
        with memory_stream(data, path) as r:
            for i, var in enumerate(selected):
                r.what = f"tensor #{i} of {len(selected)} (variable '{var.name}')"
                loaded.append((var, *read_tensor(r), path))
            r.what = "combined file"
            r.expect_end(f"the {len(selected)} tensors the program's variables "
                         f"({', '.join(v.name for v in selected) or 'none'}) take")
    else:
        for var in selected:
            what = f"variable '{var.name}'"
            data = read_member(dirname, var.name, what, manifest)
            loaded.append((var, *decode_tensor(data, what, os.path.join(dirname, var.name)),
                           os.path.join(dirname, var.name)))
    for var, array, _, path in loaded:
        _check_matches(var, array, path)
    # Only now, with every file read and checked, does the scope change.
    device = _device(executor)
    for var, array, lod, _ in loaded:
        data = device.to_device(array, executor.place) if device is not None else array
        scope.set(var.name, Tensor(data, lod))
    return [v.name for v, _, _, _ in loaded]


def save_params(executor, dirname, main_program=None, filename=None, scope=None):
    """Save the program's parameters (see :func:`save_vars`)."""
    return save_vars(executor, dirname, main_program, predicate=is_parameter,
                     filename=filename, scope=scope)


def save_persistables(executor, dirname, main_program=None, filename=None, scope=None):
    """Save every persistable variable but the feed/fetch holders (a checkpoint)."""
    return save_vars(executor, dirname, main_program, predicate=is_persistable,
                     filename=filename, scope=scope)


def load_params(executor, dirname, main_program=None, filename=None, scope=None):
    """Load the program's parameters (see :func:`load_vars`)."""
    return load_vars(executor, dirname, main_program, predicate=is_parameter,
                     filename=filename, scope=scope)


def load_persistables(executor, dirname, main_program=None, filename=None, scope=None):
    """Load every persistable variable but the feed/fetch holders."""
    return load_vars(executor, dirname, main_program, predicate=is_persistable,
                     filename=filename, scope=scope)
