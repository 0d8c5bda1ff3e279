"""Inference models: a program pruned from feeds to targets, with feed/fetch ops, plus its
parameters (reference/ir-wire-format.md, "An inference model").

Layouts, both read and written:

- Fluid: ``dirname/__model__`` (or ``model_filename``) and one file per parameter, or one
  combined file ``params_filename`` (Paddle 1.x calls it ``__params__``).
- Paddle 2.x: ``<prefix>.pdmodel`` + ``<prefix>.pdiparams`` (combined). A ``model_filename``
  ending in ``.pdmodel`` without a ``params_filename`` implies the ``.pdiparams`` next to it,
  and ``load_inference_model`` also takes the path prefix itself as ``dirname``.
"""
import os

from ..errors import HeadraceError, ProgramParseError
from ..framework import Program, Variable, analysis, default_main_program
from ..ops import attrs as attr_codec
from ..proto import framework_pb2 as pb
from .checkpoint import DirectorySave, read_member
from .persistables import gather_values, is_persistable, load_vars, select_vars, write_values
from .tensor_stream import ModelFileError

__all__ = ["inference_program", "save_inference_model", "load_inference_model"]

MODEL_FILENAME = "__model__"
FEED_HOLDER, FETCH_HOLDER = "feed", "fetch"


def _names(items, what):
    items = [items] if isinstance(items, (str, Variable)) else list(items or [])
    out = []
    for v in items:
        if isinstance(v, Variable):
            out.append(v.name)
        elif isinstance(v, str) and v:
            out.append(v)
        else:
            raise HeadraceError(f"{what} must be Variables or variable names, got {v!r}")
    return out


def _add_holder_op(bdesc, index, op_type, x, out, col):
    desc = pb.OpDesc()
    desc.type = op_type
    for container, name in ((desc.inputs, x), (desc.outputs, out)):
        slot = container.add()
        slot.parameter = "X" if container is desc.inputs else "Out"
        slot.arguments.append(name)
    attr_codec.encode(desc.attrs.add(), "col", "int", col)
    bdesc.ops.insert(index, desc)


def inference_program(main_program, feeded_var_names, target_vars):
    """The inference Program of ``main_program``: ``clone(for_test=True)``, pruned to the ops
    the targets need given the feeds (with the dependencies of kept control-flow ops' sub-
    blocks), unreferenced variables dropped, ``feed`` ops first and ``fetch`` ops last, the
    targets' producing ops marked ``is_target``."""
    feeds = _names(feeded_var_names, "feeded_var_names")
    targets = _names(target_vars, "target_vars")
    if not targets:
        raise HeadraceError("save_inference_model needs at least one target variable")
    prog = main_program.clone(for_test=True)
    block = prog.global_block()
    for name in feeds + targets:
        if block.find_var(name) is None:
            what = "fed" if name in feeds else "target"
            raise HeadraceError(f"{what} variable '{name}' is not a variable of the program's "
                                f"global block")
    # Old feed/fetch ops (a program loaded from an inference model) are replaced by new ones.
    for i in reversed(range(len(block.ops))):
        block.ops[i].desc.ClearField("is_target")
        if block.ops[i].type in ("feed", "fetch"):
            block.remove_op(i)
    kept = {id(op) for op in analysis.prune(block, targets, feeds)}
    for i in reversed(range(len(block.ops))):
        if id(block.ops[i]) not in kept:
            block.remove_op(i)
    _check_computable(block, feeds, targets)
    for name in targets:  # the last op writing it (fed and persistable targets may have none)
        writer = next((op for op in reversed(block.ops) if name in analysis.writes(op)), None)
        if writer is not None:
            writer.desc.is_target = True
    # Drop what the pruned ops no longer reach: the loader of a combined parameter file derives
    # the file's contents from the program's persistables, so stale ones must not remain.
    reachable = analysis.reachable_blocks(block)
    used = set(feeds) | set(targets)
    for b in prog.blocks:
        if b.idx in reachable:
            used.update(n for op in b.ops for n in op.input_arg_names + op.output_arg_names)
    for b in prog.blocks:
        if b.idx not in reachable:  # sub-blocks of pruned ops: emptied, indices kept stable
            for i in reversed(range(len(b.ops))):
                b.remove_op(i)
        for name in [n for n in b.vars if b.idx not in reachable or n not in used]:
            b.remove_var(name)
    for name, kind in ((FEED_HOLDER, "feed_minibatch"), (FETCH_HOLDER, "fetch_list")):
        block.create_var(name=name, type=kind, persistable=True)
    desc = pb.ProgramDesc()
    desc.CopyFrom(prog.desc)
    bdesc = desc.blocks[0]
    for col, name in enumerate(feeds):
        _add_holder_op(bdesc, col, "feed", FEED_HOLDER, name, col)
    for col, name in enumerate(targets):
        _add_holder_op(bdesc, len(bdesc.ops), "fetch", name, FETCH_HOLDER, col)
    out = Program.from_desc(desc, prog.registry)
    out.random_seed = prog.random_seed
    return out


def _check_computable(block, feeds, targets):
    """Every value the kept ops read must be fed, persistable, or computed before: otherwise
    the saved model could never run, and the user fed the wrong variables."""
    missing = analysis.first_unsatisfied_read(block.ops, feeds)
    if missing is not None:
        op, name = missing
        raise HeadraceError(
            f"the targets ({', '.join(targets)}) need variable '{name}' (read by op "
            f"'{op.type}', block {op.block.idx}, op #{op.idx}), which is neither fed nor "
            f"computed from the fed variables ({', '.join(feeds) or 'none'}): add it to "
            f"feeded_var_names")


def _file_names(model_filename, params_filename):
    """The model's and the combined parameters' member names in the model directory."""
    model = model_filename or MODEL_FILENAME
    if params_filename is None and model.endswith(".pdmodel"):
        params_filename = model[:-len(".pdmodel")] + ".pdiparams"
    return model, params_filename


def save_inference_model(dirname, feeded_var_names, target_vars, executor, main_program=None,
                         model_filename=None, params_filename=None, program_only=False,
                         scope=None):
    """Save the inference model of ``main_program`` (default: the default main program) for
    the feeds and targets into ``dirname``; parameter values come from ``scope`` (default:
    the global scope). Returns the fetch variables' names."""
    main_program = main_program if main_program is not None else default_main_program()
    if not isinstance(main_program, Program):
        raise HeadraceError(f"main_program must be a Program, got {type(main_program).__name__}")
    program = inference_program(main_program, feeded_var_names, target_vars)
    model_name, params_filename = _file_names(model_filename, params_filename)
    model_path = os.path.join(dirname, model_name)
    values = [] if program_only else \
        gather_values(executor, select_vars(program, None, is_persistable), scope)
    # The model and its parameters become visible together (a model never sits beside the
    # parameters of another).
    with DirectorySave(dirname) as save:
        if not program_only:
            write_values(save, values, params_filename)
        save.write(model_name, "the model file", program.serialize_to_string())
    return [op.input("X")[0] for op in _holder_ops(program, "fetch", model_path)]


def _holder_ops(program, op_type, path):
    """The feed or fetch ops of the global block, by col; cols must be 0..n-1."""
    ops = [op for op in program.global_block().ops if op.type == op_type]
    for op in ops:
        if len(op.input("X")) != 1 or len(op.output("Out")) != 1:
            raise ModelFileError(f"a {op_type} op does not bind exactly one variable to each "
                                 f"of X and Out", path, expected="X=[one], Out=[one]",
                                 found=f"X={op.input('X')}, Out={op.output('Out')}")
    try:
        cols = [op.attr("col") for op in ops]
    except HeadraceError as e:
        raise ModelFileError(f"a {op_type} op has no usable 'col' attribute: {e}", path) \
            from None
    if sorted(cols) != list(range(len(ops))):
        raise ModelFileError(f"the {op_type} ops' col attributes are not 0..{len(ops) - 1}",
                             path, expected=list(range(len(ops))), found=cols)
    return [op for _, op in sorted(zip(cols, ops), key=lambda p: p[0])]


def load_inference_model(dirname, executor, model_filename=None, params_filename=None,
                         scope=None, optimize=True):
    """Load an inference model; its parameters go into ``scope`` (default: the global scope).
    Returns ``[program, feed_target_names, fetch_targets]`` (fetch targets are Variables).

    ``optimize``: apply the inference passes (headrace.passes.INFERENCE_PASSES: identity ops
    removed, constants folded, batch_norm folded into the weights, fused fc/conv2d ops) to
    the program; folded weights are new variables of ``scope``. False loads the program as
    the file has it."""
    if model_filename is None and not os.path.isdir(dirname) and \
            os.path.isfile(dirname + ".pdmodel"):
        dirname, prefix = os.path.split(dirname)  # a Paddle 2.x path prefix
        model_filename = prefix + ".pdmodel"
    model_name, params_filename = _file_names(model_filename, params_filename)
    model_path = os.path.join(dirname, model_name)
    try:
        data = read_member(dirname, model_name, "the model file")
    except ModelFileError as e:
        if e.reason.startswith("no such file"):
            raise ModelFileError("no model file here (wrong directory or model_filename?)",
                                 model_path) from None
        raise
    try:
        program = Program.parse_from_string(data)
    except ProgramParseError as e:
        raise ModelFileError(f"not a valid program: {e}", model_path) from None
    feed_names = [op.output("Out")[0] for op in _holder_ops(program, "feed", model_path)]
    _fetch_targets(program, model_path)    # a broken model is refused before any loading
    if select_vars(program, None, is_persistable):  # a model without parameters has no file
        load_vars(executor, dirname, program, predicate=is_persistable,
                  filename=params_filename, scope=scope)
    if optimize:
        from .. import passes   # passes build on the executor, which imports io
        passes.apply(program, scope=scope, place=executor.place)
    return [program, feed_names, _fetch_targets(program, model_path)]


def _fetch_targets(program, model_path):
    """The fetch ops' variables in col order (the passes may have renamed them)."""
    targets = []
    for op in _holder_ops(program, "fetch", model_path):
        var = program.global_block().find_var(op.input("X")[0])
        if var is None:
            raise ModelFileError(f"fetch target '{op.input('X')[0]}' is not declared in the "
                                 f"program", model_path)
        targets.append(var)
    return targets
