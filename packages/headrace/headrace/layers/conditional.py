"""Branches: ``cond`` (whole batch), ``case``/``switch_case``/``Switch`` (first true case),
and ``IfElse`` (per row of the minibatch), as Paddle Fluid builds them.

Every branch is a ``conditional_block`` whose sub-block holds the branch's ops; what a branch
returns is copied to a variable of the enclosing block inside the branch. ``cond`` then picks
the taken branch's copy with ``select_input``; ``IfElse`` splits its inputs' rows between the
branches with ``split_lod_tensor`` and merges the outputs back in row order with
``merge_lod_tensor``. All of it is differentiable (``conditional_block_grad``).
"""
from ..checks import check_variable
from ..errors import LayerError
from ..framework import Variable
from ..layer_helper import LayerHelper
from ..ops.shape import numel
from .control_flow import (BlockGuard, equal, logical_and, logical_not, step_scopes_var,
                           sub_block_io)
from .tensor import assign, cast, fill_constant

__all__ = ["cond", "case", "switch_case", "Switch", "IfElse"]


def _scalar_condition(fn, pred):
    check_variable(fn, "pred", pred, ("bool",))
    if numel(pred.shape) not in (1, -1):
        raise LayerError(f"{fn}: the condition must hold one element (the whole batch takes "
                         f"one branch; IfElse chooses per row), found {pred.name} of shape "
                         f"{list(pred.shape)}")
    return pred


def _branch(helper, conds, scalar):
    """A guard whose block becomes a ``conditional_block`` on exit; ``conds()`` gives its
    Cond variables then (IfElse knows them only once the branch has read its rows)."""

    def complete(body):
        parent = body.parent
        xs, outs = sub_block_io(body)
        parent.append_op("conditional_block", {"Cond": list(conds()), "Input": xs},
                         {"Out": outs, "Scope": [step_scopes_var(parent, helper)]},
                         {"sub_block": body, "is_scalar_condition": scalar})
    return BlockGuard(helper.main_program, complete)


def _conditional_block(helper, conds, scalar, build):
    """Append a ``conditional_block`` over the ops ``build()`` appends; returns build's
    result."""
    with _branch(helper, lambda: conds, scalar):
        return build()


# -- nested structures of outputs ---------------------------------------------------------

def _flatten(value, what):
    """Leaves (Variables or None) of a nested list/tuple/dict, and a function rebuilding it."""
    if isinstance(value, Variable) or value is None:
        return [value], lambda leaves: leaves[0]
    if isinstance(value, (list, tuple)):
        parts = [_flatten(v, what) for v in value]
        sizes = [len(p[0]) for p in parts]

        def rebuild(leaves):
            out, k = [], 0
            for (_, make), n in zip(parts, sizes):
                out.append(make(leaves[k:k + n]))
                k += n
            return type(value)(out)
        return [leaf for p in parts for leaf in p[0]], rebuild
    if isinstance(value, dict):
        keys = list(value)
        leaves, make = _flatten([value[k] for k in keys], what)
        return leaves, lambda ls: dict(zip(keys, make(ls)))
    raise LayerError(f"cond: {what} must return Variables, or lists, tuples or dicts of them, "
                     f"got {type(value).__name__} {value!r}"[:300])


def _copy_out(helper, value, what):
    """Copy a branch's results to new variables of the enclosing block (inside the branch)."""
    leaves, rebuild = _flatten(value, what)
    parent = helper.main_program.current_block().parent
    copies = []
    for v in leaves:
        if v is None:
            copies.append(None)
            continue
        out = parent.create_var(name=helper.main_program._unique_var_name(f"{helper.name}.out"),
                                shape=v.shape, dtype=v.dtype, lod_level=v.lod_level)
        assign(v, out)
        copies.append(out)
    return copies, rebuild


def cond(pred, true_fn=None, false_fn=None, name=None):
    """``true_fn()`` if ``pred`` (a bool Variable of one element) holds, else ``false_fn()``,
    as Paddle's ``cond``: each function's ops form a branch that runs only when taken, and the
    results (a Variable, None, or a nested list/tuple/dict of them, the same structure from
    both functions) are picked with ``select_input``."""
    helper = LayerHelper("cond", name=name)
    _scalar_condition("cond", pred)
    for fn, what in ((true_fn, "true_fn"), (false_fn, "false_fn")):
        if fn is not None and not callable(fn):
            raise LayerError(f"cond: {what} must be callable, got {fn!r}"[:300])
    not_pred = logical_not(pred)
    taken = []
    for fn, c, what in ((true_fn, pred, "true_fn"), (false_fn, not_pred, "false_fn")):
        if fn is None:
            taken.append(None)
            continue
        taken.append(_conditional_block(helper, [c], True,
                                        lambda fn=fn, what=what: _copy_out(helper, fn(), what)))
    if true_fn is None or false_fn is None:
        return None  # Paddle: a branch without a function returns nothing
    (t_leaves, rebuild), (f_leaves, _) = taken
    if len(t_leaves) != len(f_leaves):
        raise LayerError(f"cond: true_fn and false_fn must return the same structure; they "
                         f"return {len(t_leaves)} and {len(f_leaves)} values")
    mask = cast(pred, "int32")
    merged = []
    for k, (t, f) in enumerate(zip(t_leaves, f_leaves)):
        if t is None and f is None:
            merged.append(None)
            continue
        if t is None or f is None:
            raise LayerError(f"cond: output {k} is None in one branch only")
        if t.dtype != f.dtype:
            raise LayerError(f"cond: output {k} is {t.dtype} in true_fn and {f.dtype} in "
                             f"false_fn; both branches must return the same dtypes")
        out = helper.create_variable_for_type_inference(t.dtype)
        helper.append_op("select_input", {"X": [f, t], "Mask": mask}, {"Out": out})
        merged.append(out)
    return rebuild(merged)


def case(pred_fn_pairs, default=None, name=None):
    """The function of the first ``(pred, fn)`` whose ``pred`` holds, else ``default()`` (else
    the last pair's function), as Paddle's ``case``: nested ``cond``s."""
    if not isinstance(pred_fn_pairs, (list, tuple)) or not pred_fn_pairs:
        raise LayerError(f"case: pred_fn_pairs must be a non-empty list of (pred, fn) pairs, "
                         f"got {pred_fn_pairs!r}"[:300])
    for k, pair in enumerate(pred_fn_pairs):
        if not (isinstance(pair, (list, tuple)) and len(pair) == 2 and callable(pair[1])):
            raise LayerError(f"case: pred_fn_pairs[{k}] must be a (pred, callable) pair, got "
                             f"{pair!r}"[:300])
        _scalar_condition("case", pair[0])
    pairs = list(pred_fn_pairs)
    if default is None:
        *pairs, (_, default) = pairs
        if not pairs:
            return default()
    (pred, fn), rest = pairs[0], pairs[1:]
    if not rest:
        return cond(pred, fn, default, name=name)
    return cond(pred, fn, lambda: case(rest, default), name=name)


def switch_case(branch_index, branch_fns, default=None, name=None):
    """``branch_fns[branch_index]()`` (a dict or list of functions, or of (index, fn) pairs),
    else ``default()`` (else the function of the largest index), as Paddle's
    ``switch_case``."""
    check_variable("switch_case", "branch_index", branch_index, ("int32", "int64"))
    if isinstance(branch_fns, dict):
        items = sorted(branch_fns.items())
    elif isinstance(branch_fns, (list, tuple)) and branch_fns and all(
            isinstance(p, (list, tuple)) and len(p) == 2 for p in branch_fns):
        items = sorted(branch_fns)
    elif isinstance(branch_fns, (list, tuple)):
        items = list(enumerate(branch_fns))
    else:
        raise LayerError(f"switch_case: branch_fns must be a dict, a list of functions or of "
                         f"(index, fn) pairs, got {branch_fns!r}"[:300])
    if not items:
        raise LayerError("switch_case: branch_fns is empty")
    pairs = []
    for index, fn in items:
        if not isinstance(index, int) or not callable(fn):
            raise LayerError(f"switch_case: branch {index!r} must be an int key and a "
                             f"callable, got {fn!r}"[:300])
        pairs.append((equal(branch_index, fill_constant([1], branch_index.dtype, index)), fn))
    return case(pairs, default, name=name)


class Switch:
    """Fluid's ``Switch``: the first ``case`` whose condition holds runs, else ``default``::

        with layers.Switch() as switch:
            with switch.case(step < 100):
                layers.assign(warm, output=lr)
            with switch.default():
                layers.assign(base, output=lr)
    """

    def __init__(self, name=None):
        self.helper = LayerHelper("switch", name=name)
        self.none_yet = None  # bool: no earlier case held
        self.inside = False

    def __enter__(self):
        self.inside = True
        return self

    def __exit__(self, exc_type, exc, tb):
        self.inside = False
        return False

    def _guard(self, c):
        return _branch(self.helper, lambda: [c], True)

    def case(self, condition):
        """``with switch.case(cond):`` (``cond`` a bool Variable of one element)."""
        if not self.inside:
            raise self.helper.error("case() is used inside 'with Switch() as switch:'")
        _scalar_condition("Switch.case", condition)
        if self.none_yet is None:
            c = condition
            self.none_yet = logical_not(condition)
        else:
            c = logical_and(self.none_yet, condition)
            self.none_yet = logical_and(self.none_yet, logical_not(condition))
        return self._guard(c)

    def default(self):
        """``with switch.default():`` runs when no case held."""
        if not self.inside:
            raise self.helper.error("default() is used inside 'with Switch() as switch:'")
        if self.none_yet is None:
            raise self.helper.error("default() needs at least one case() before it")
        return self._guard(self.none_yet)


class IfElse:
    """Fluid's ``IfElse``: ``cond`` is a bool ``[N, 1]`` Variable, one entry per row of the
    minibatch; each row goes through the true or the false branch, and ``ie()`` merges the
    outputs back in the rows' original order (LoD kept)::

        ie = layers.IfElse(cond)
        with ie.true_block():
            ie.output(layers.fc(ie.input(x), 10))
        with ie.false_block():
            ie.output(layers.scale(ie.input(x), 2.0))
        out, = ie()

    A branch that receives no rows does not run. Both branches must make the same number of
    outputs, in the same order.
    """

    def __init__(self, cond, name=None):
        self.helper = LayerHelper("ifelse", name=name)
        check_variable("IfElse", "cond", cond, ("bool",))
        self.cond = cond
        self.inputs = {}  # id(x) -> (true part, false part)
        self.outputs = {True: None, False: None}
        self.branch = None  # True/False while building a branch
        self.first_part = {}

    def _block(self, branch):
        if self.branch is not None:
            raise self.helper.error("true_block()/false_block() cannot be nested")
        if self.outputs[branch] is not None:
            raise self.helper.error(f"{'true' if branch else 'false'}_block() was already "
                                    f"built")
        ie = self

        class Guard:
            """Marks which branch is being built around the block's own guard."""

            def __init__(self, inner):
                self.inner = inner

            def __enter__(self):
                ie.branch, ie.outputs[branch] = branch, []
                return self.inner.__enter__()

            def __exit__(self, exc_type, exc, tb):
                ie.branch = None
                return self.inner.__exit__(exc_type, exc, tb)

        # The branch runs when its rows are not empty (Fluid's non-scalar condition).
        return Guard(_branch(self.helper, lambda: [self.first_part.get(branch, self.cond)],
                             False))

    def true_block(self):
        return self._block(True)

    def false_block(self):
        return self._block(False)

    def input(self, x):
        """The rows of ``x`` that this branch receives (``split_lod_tensor`` on ``cond``)."""
        if self.branch is None:
            raise self.helper.error("input() is used inside true_block() or false_block()")
        check_variable("IfElse.input", "x", x)
        parts = self.inputs.get(id(x))
        if parts is None:
            helper, program = self.helper, self.helper.main_program
            parent = program.current_block().parent
            parts = tuple(parent.create_var(
                name=program._unique_var_name(f"{helper.name}.{side}"), shape=x.shape,
                dtype=x.dtype, lod_level=x.lod_level) for side in ("true", "false"))
            parent.append_op("split_lod_tensor", {"X": x, "Mask": self.cond},
                             {"OutTrue": parts[0], "OutFalse": parts[1]}, {"level": 0})
            self.inputs[id(x)] = parts
        part = parts[0] if self.branch else parts[1]
        self.first_part.setdefault(self.branch, part)
        return part

    def output(self, *outs):
        """Declare this branch's outputs (copied to the enclosing block)."""
        if self.branch is None:
            raise self.helper.error("output() is used inside true_block() or false_block()")
        copies, _ = _copy_out(self.helper, list(outs), "IfElse.output")
        self.outputs[self.branch].extend(copies)

    def __call__(self):
        """The merged outputs, a list."""
        t, f = self.outputs[True], self.outputs[False]
        if t is None or f is None:
            raise self.helper.error("both true_block() and false_block() must be built "
                                    "before ie()")
        if len(t) != len(f):
            raise self.helper.error(f"the true branch has {len(t)} outputs, the false branch "
                                    f"{len(f)}; they must match")
        merged = []
        for a, b in zip(t, f):
            out = self.helper.create_variable_for_type_inference(a.dtype)
            self.helper.append_op("merge_lod_tensor",
                                  {"X": self.cond, "Mask": self.cond, "InTrue": a,
                                   "InFalse": b},
                                  {"Out": out}, {"level": 0})
            merged.append(out)
        return merged
