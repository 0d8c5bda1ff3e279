"""Control flow: loops (``While``, ``while_loop``), counters, comparisons, logical ops,
tensor arrays."""
from ..checks import check_bool, check_number, check_variable
from ..errors import LayerError
from ..framework import Variable
from ..framework.analysis import block_writes, exposed_reads
from ..framework.builder import constant
from ..layer_helper import LayerHelper
from ..ops.shape import numel
from .tensor import assign

__all__ = ["increment", "less_than", "less_equal", "greater_than", "greater_equal", "equal",
           "not_equal", "logical_and", "logical_or", "logical_xor", "logical_not",
           "create_array", "array_write", "array_read", "array_length", "While", "while_loop"]


def increment(x, value=1.0, in_place=True):
    """x + value for a one-element x (a loop counter); in place by default."""
    helper = LayerHelper("increment")
    check_variable("increment", "x", x)
    out = x if check_bool("increment", "in_place", in_place) else \
        helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("increment", {"X": x}, {"Out": out},
                     {"step": check_number("increment", "value", value)})
    return out


def _compare(op_type, x, y, force_cpu, cond):
    helper = LayerHelper(op_type)
    check_variable(op_type, "x", x)
    if not isinstance(y, Variable):
        y = constant(helper.main_program.current_block(), check_number(op_type, "y", y),
                     x.dtype, key=f"{helper.name}.tmp")
    if cond is None:
        cond = helper.create_variable_for_type_inference("bool", stop_gradient=True)
    else:
        check_variable(op_type, "cond", cond)
    attrs = {} if force_cpu is None else {"force_cpu": check_bool(op_type, "force_cpu",
                                                                  force_cpu)}
    helper.append_op(op_type, {"X": x, "Y": y}, {"Out": cond}, attrs)
    return cond


def less_than(x, y, force_cpu=None, cond=None):
    """x < y elementwise, bool (y may be a number)."""
    return _compare("less_than", x, y, force_cpu, cond)


def less_equal(x, y, force_cpu=None, cond=None):
    """x <= y elementwise, bool."""
    return _compare("less_equal", x, y, force_cpu, cond)


def greater_than(x, y, force_cpu=None, cond=None):
    """x > y elementwise, bool."""
    return _compare("greater_than", x, y, force_cpu, cond)


def greater_equal(x, y, force_cpu=None, cond=None):
    """x >= y elementwise, bool."""
    return _compare("greater_equal", x, y, force_cpu, cond)


def equal(x, y, force_cpu=None, cond=None):
    """x == y elementwise, bool (the Python ``==`` on Variables stays an identity test)."""
    return _compare("equal", x, y, force_cpu, cond)


def not_equal(x, y, force_cpu=None, cond=None):
    """x != y elementwise, bool."""
    return _compare("not_equal", x, y, force_cpu, cond)


def _logical(op_type, x, y=None, out=None, name=None):
    helper = LayerHelper(op_type, name=name)
    check_variable(op_type, "x", x, ("bool",))
    inputs = {"X": x}
    if y is not None or op_type != "logical_not":
        inputs["Y"] = check_variable(op_type, "y", y, ("bool",))
    out = out if out is not None else \
        helper.create_variable_for_type_inference("bool", stop_gradient=True)
    helper.append_op(op_type, inputs, {"Out": out})
    return out


def logical_and(x, y, out=None, name=None):
    """x and y elementwise over bool Variables."""
    return _logical("logical_and", x, y, out, name)


def logical_or(x, y, out=None, name=None):
    """x or y elementwise over bool Variables."""
    return _logical("logical_or", x, y, out, name)


def logical_xor(x, y, out=None, name=None):
    """x xor y elementwise over bool Variables."""
    return _logical("logical_xor", x, y, out, name)


def logical_not(x, out=None, name=None):
    """not x elementwise over a bool Variable."""
    return _logical("logical_not", x, None, out, name)


def create_array(dtype):
    """An empty tensor array (a LOD_TENSOR_ARRAY variable)."""
    helper = LayerHelper("array")
    return helper.create_variable(name=f"{helper.name}.out", type="lod_tensor_array",
                                  dtype=dtype)


def array_write(x, i, array=None):
    """array[i] = x (``write_to_array``); i is an int64 [1] Variable. A new array when
    ``array`` is None. Returns the array."""
    helper = LayerHelper("array_write")
    check_variable("array_write", "x", x)
    check_variable("array_write", "i", i, ("int64",))
    if array is None:
        array = create_array(x.dtype)
    elif not isinstance(array, Variable) or array.kind != "lod_tensor_array":
        raise helper.error(f"argument 'array' must be a tensor array Variable, got {array!r}")
    helper.append_op("write_to_array", {"X": x, "I": i}, {"Out": array})
    return array


def array_read(array, i):
    """array[i] (``read_from_array``); i is an int64 [1] Variable."""
    helper = LayerHelper("array_read")
    if not isinstance(array, Variable) or array.kind != "lod_tensor_array":
        raise helper.error(f"argument 'array' must be a tensor array Variable, got {array!r}")
    check_variable("array_read", "i", i, ("int64",))
    out = helper.create_variable_for_type_inference(array.dtype)
    helper.append_op("read_from_array", {"X": array, "I": i}, {"Out": out})
    return out


def array_length(array):
    """The length of a tensor array (``lod_array_length``): an int64 [1] Variable."""
    helper = LayerHelper("array_length")
    if not isinstance(array, Variable) or array.kind != "lod_tensor_array":
        raise helper.error(f"argument 'array' must be a tensor array Variable, got {array!r}")
    out = helper.create_variable_for_type_inference("int64", stop_gradient=True)
    helper.append_op("lod_array_length", {"X": array}, {"Out": out})
    return out


def _check_condition(fn, cond):
    check_variable(fn, "cond", cond, ("bool",))
    if numel(cond.shape) not in (1, -1):
        raise LayerError(f"{fn}: the condition must hold one element, found {cond.name} of "
                         f"shape {list(cond.shape)}")
    return cond


class While:
    """A loop, as Fluid's ``While``: the ops appended inside ``with loop.block():`` form the
    body, run while ``cond`` (a bool Variable of one element) holds. The body must update
    ``cond`` (e.g. ``less_than(i, n, cond=cond)``).

    On leaving the block a ``while`` op is appended to the enclosing block: X lists the outer
    variables the body reads before writing them, Out the outer variables it writes (``cond``
    included), StepScopes a new step-scopes variable. Nested loops and sub-blocks count (the
    rules of ``headrace.framework.analysis``)."""

    def __init__(self, cond, is_test=False, name=None):
        self.helper = LayerHelper("while", name=name)
        self.cond_var = _check_condition("While", cond)
        self.is_test = check_bool("While", "is_test", is_test)
        self._used = False

    def block(self):
        """Build the body: ``with loop.block(): ...``. Usable once per loop."""
        if self._used:
            raise self.helper.error("block() was already used: a While has one body")
        self._used = True
        return BlockGuard(self.helper.main_program, self._complete)

    def _complete(self, body):
        parent = self.helper.main_program.block(body.parent_idx)
        # Out lists the condition first (Fluid lists it too); X leaves it to its own slot.
        xs, outs = sub_block_io(body, skip=(self.cond_var.name,), first=(self.cond_var.name,))
        steps = step_scopes_var(parent, self.helper)
        parent.append_op("while", {"X": xs, "Condition": [self.cond_var]},
                         {"Out": outs, "StepScopes": [steps]},
                         {"sub_block": body, "is_test": self.is_test})


def sub_block_io(body, skip=(), first=()):
    """``(X, Out)`` of the op that will own ``body``: the outer variables the body reads before
    writing them (less ``skip``), and those it writes (``first`` first); nested blocks count
    (the rules of ``headrace.framework.analysis``)."""
    parent = body.parent
    xs = [n for _, n in exposed_reads(body.ops, available=skip)
          if n not in body.vars and parent.find_var(n) is not None]
    outs = [n for n in dict.fromkeys([*first, *block_writes(body)])
            if n not in body.vars and parent.find_var(n) is not None]
    return [parent.find_var(n) for n in xs], [parent.find_var(n) for n in outs]


def step_scopes_var(block, helper):
    """A new step-scopes variable in ``block`` for a control-flow op's kept steps."""
    return block.create_var(
        name=helper.main_program._unique_var_name(f"{helper.name}.step_scopes"),
        type="step_scopes")


class BlockGuard:
    """``with guard:`` builds a sub-block of the current block and calls ``complete(block)``
    on a clean exit. A class rather than a generator context manager, so that the op appended
    on exit is attributed to the user's ``with`` line, not to contextlib."""

    def __init__(self, program, complete):
        self.program, self.complete = program, complete

    def __enter__(self):
        self.body = self.program.create_block()
        return self.body

    def __exit__(self, exc_type, exc, tb):
        self.program.current_block_idx = self.body.parent_idx
        if exc_type is None:
            self.complete(self.body)
        return False


def _flat_vars(fn, what, values):
    values = list(values) if isinstance(values, (list, tuple)) else [values]
    for k, v in enumerate(values):
        if not isinstance(v, Variable):
            raise LayerError(f"{fn}: {what}[{k}] must be a Variable, got "
                             f"{type(v).__name__} {v!r}"[:300])
    return values


def while_loop(cond, body, loop_vars, is_test=False, name=None):
    """``while cond(*loop_vars): loop_vars = body(*loop_vars)``, as Paddle's ``while_loop``.

    ``cond`` returns a bool Variable of one element; ``body`` returns as many Variables as
    ``loop_vars`` (one Variable or a list/tuple). At the end of each step the body's results
    are assigned to the loop variables in place, so the returned list holds ``loop_vars``
    themselves, with their final values."""
    if not callable(cond):
        raise LayerError(f"while_loop: argument 'cond' must be callable, got {cond!r}"[:300])
    if not callable(body):
        raise LayerError(f"while_loop: argument 'body' must be callable, got {body!r}"[:300])
    if not isinstance(loop_vars, (list, tuple)) or not loop_vars:
        raise LayerError("while_loop: argument 'loop_vars' must be a non-empty list or tuple "
                         f"of Variables, got {loop_vars!r}"[:300])
    loop_vars = _flat_vars("while_loop", "loop_vars", loop_vars)
    pre_cond = cond(*loop_vars)
    if not isinstance(pre_cond, Variable):
        raise LayerError(f"while_loop: cond must return a bool Variable, got {pre_cond!r}"[:300])
    _check_condition("while_loop", pre_cond)
    loop = While(pre_cond, is_test=is_test, name=name)
    with loop.block():
        results = _flat_vars("while_loop", "body's result", body(*loop_vars))
        if len(results) != len(loop_vars):
            raise LayerError(f"while_loop: body must return as many values as loop_vars "
                             f"({len(loop_vars)}), returned {len(results)}")
        now_cond = _flat_vars("while_loop", "cond's result", cond(*results))[0]
        _check_condition("while_loop", now_cond)
        for new, old in zip(results, loop_vars):
            if new is old:
                continue
            if old.kind == "lod_tensor_array" or new.kind == "lod_tensor_array":
                raise LayerError(f"while_loop: a tensor array loop variable ({old.name}) must "
                                 f"be returned as itself, got {new.name}")
            assign(new, old)
        assign(now_cond, pre_cond)
    return loop_vars
