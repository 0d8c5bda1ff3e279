"""Shared fixtures of the core's tests: an isolated registry of fake ops, and one of the core
alone.

The core's tests never depend on the real op plugins (they are written in parallel): programs
here are built against ``fake_registry``, a registry holding only the ops below (and the core's
own, which every registry has), or ``core_registry``, the core with no plugin at all.
"""
import pytest

import headrace
from headrace.ops import Attr, In, OpDef, Out, build_registry, hookimpl
from headrace.ops.shape import same_as
from headrace.testing import fixtures


def _fill_infer(ctx):
    ctx.set_output("Out", ctx.attr("shape"), ctx.attr("dtype"))


def _concat_infer(ctx):
    metas = ctx.inputs("X")
    ranks = [m.rank for m in metas]
    ctx.expect(len(set(ranks)) == 1, "inputs 'X' must have the same rank",
               expected="equal ranks", found=f"ranks {ranks}")
    shape = list(metas[0].shape)
    axis = ctx.attr("axis")
    shape[axis] = sum(m.shape[axis] for m in metas)
    ctx.set_output("Out", shape, metas[0].dtype)


def _dropout_infer(ctx):
    x = ctx.input("X")
    ctx.set_output_like("Out", x)
    ctx.set_output("Mask", x.shape, "uint8")


def _buggy_infer(ctx):
    """A plugin rule with bugs, chosen by the 'bug' attribute."""
    bug = ctx.attr("bug")
    if bug == "raise":
        raise ZeroDivisionError("division by zero in a rule")
    ctx.set_output("Out", [2], "float13" if bug == "dtype" else "float32",
                   lod_level=-1 if bug == "lod" else 0,
                   kind="nonsense" if bug == "kind" else "lod_tensor")
    if bug != "none":
        ctx.set_output("Out", [3], "float32", index=1)


def _prob_check(p):
    return None if 0.0 <= p <= 1.0 else "must be in [0, 1]"


# One attribute of every type, each with a default (the serialization tests use it).
ALL_ATTRS = [
    Attr("a_int", "int", 0), Attr("a_float", "float", 0.0), Attr("a_string", "string", ""),
    Attr("a_ints", "ints", []), Attr("a_floats", "floats", []), Attr("a_strings", "strings", []),
    Attr("a_bool", "bool", False), Attr("a_bools", "bools", []), Attr("a_long", "long", 0),
    Attr("a_longs", "longs", []), Attr("a_float64s", "float64s", []),
    Attr("a_float64", "float64", 0.0), Attr("a_var", "var", ""), Attr("a_vars", "vars", []),
]

FAKE_OPS = [
    OpDef("ident", inputs=[In("X")], outputs=[Out("Out")], infer=same_as("X")),
    OpDef("fill", outputs=[Out("Out")],
          attrs=[Attr("shape", "ints", [1]), Attr("dtype", "string", "float32"),
                 Attr("value", "float", 0.0)],
          infer=_fill_infer),
    OpDef("concat", inputs=[In("X", duplicable=True)], outputs=[Out("Out")],
          attrs=[Attr("axis", "int", 0)], infer=_concat_infer),
    OpDef("dropout", inputs=[In("X", dtypes=["float32", "float64"])],
          outputs=[Out("Out"), Out("Mask", intermediate=True)],
          attrs=[Attr("dropout_prob", "float", 0.5, check=_prob_check),
                 Attr("is_test", "bool", False)],
          infer=_dropout_infer),
    OpDef("pick", inputs=[In("X"), In("Index", optional=True)], outputs=[Out("Out")],
          attrs=[Attr("k", "int"), Attr("mode", "string", "sum", choices=["sum", "mean"])],
          infer=same_as("X")),
    OpDef("cond", inputs=[In("Cond", optional=True)], outputs=[Out("Out", optional=True)],
          attrs=[Attr("sub_block", "block")], no_kernel=True),
    OpDef("buggy", inputs=[In("X", optional=True)], outputs=[Out("Out", duplicable=True)],
          attrs=[Attr("bug", "string", "none")], infer=_buggy_infer),
    OpDef("all_attrs", outputs=[Out("Out")], attrs=ALL_ATTRS,
          infer=lambda ctx: ctx.set_output("Out", [1], "float32")),
]


class FakeOps:
    """A plugin object: a module-like class whose hook registers FAKE_OPS."""

    @staticmethod
    @hookimpl
    def headrace_register_ops(registry):
        for op in FAKE_OPS:
            registry.add_op(op)


@pytest.fixture(scope="session")
def fake_registry():
    """A registry holding only the fake ops (no installed plugin is loaded)."""
    reg = build_registry(plugins=[("fake-ops", FakeOps)], autoload=False)
    # (plus the core's own ops, which every registry has: see core_ops/plugin.py)
    core = build_registry(autoload=False)
    assert sorted(reg) == sorted([op.type for op in FAKE_OPS] + list(core))
    return reg


@pytest.fixture
def prog(fake_registry):
    """An empty program validated against the fake registry."""
    return headrace.Program(registry=fake_registry)


def _plain(value):
    if isinstance(value, headrace.Block):
        return ("block", value.idx)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def snapshot(program):
    """Everything the Python objects of ``program`` say, block by block (for comparisons)."""
    out = []
    for block in program.blocks:
        vars_ = [(v.name, v.kind, v.shape, v.dtype, v.lod_level, v.persistable, v.stop_gradient,
                  v.is_parameter, type(v).__name__, v.op and (v.op.block.idx, v.op.idx))
                 for v in block.vars.values()]
        ops = [(op.type, op.inputs, op.outputs, {k: _plain(v) for k, v in op.attrs.items()})
               for op in block.ops]
        out.append((block.idx, block.parent_idx, vars_, ops))
    return out


@pytest.fixture
def assert_consistent():
    """``assert_consistent(program)``: the Python objects and the ProgramDesc agree.

    Checks names and order of vars and ops against the live desc, then rebuilds a program from
    the serialized bytes alone and compares every Python-visible property with the live one.
    """
    def check(program):
        assert len(program.desc.blocks) == len(program.blocks)
        for i, block in enumerate(program.blocks):
            bdesc = program.desc.blocks[i]
            assert block.idx == bdesc.idx == i
            assert list(block.vars) == [v.name for v in bdesc.vars]
            for var, vdesc in zip(block.vars.values(), bdesc.vars):
                assert var.desc == vdesc
            assert [op.type for op in block.ops] == [o.type for o in bdesc.ops]
            for op, odesc in zip(block.ops, bdesc.ops):
                assert op.desc == odesc
                assert op.input_arg_names == [a for s in odesc.inputs for a in s.arguments]
                assert op.output_arg_names == [a for s in odesc.outputs for a in s.arguments]
        again = headrace.Program.parse_from_string(program.serialize_to_string(),
                                                   registry=program.registry)
        assert snapshot(again) == snapshot(program)
    return check


@pytest.fixture
def snapshot_of():
    """The :func:`snapshot` function, for tests that compare two programs."""
    return snapshot


@pytest.fixture
def progs():
    """Fresh (main, startup), installed as the defaults, with fresh unique names."""
    main, startup = headrace.Program(), headrace.Program()
    with headrace.program_guard(main, startup), headrace.unique_name.guard():
        yield main, startup


# -- the core's own ops (headrace.core_ops), tested with nothing but the core installed --------

@pytest.fixture(scope="session")
def core_registry():
    """A registry of the core alone: its built-in plugin, no installed plugin."""
    reg = build_registry(autoload=False)
    assert not reg.failed, reg.failed
    return reg


@pytest.fixture
def infer(core_registry):
    """``infer(op_type, inputs, attrs=None)`` -> ``(shape, dtype)`` of the single Out."""
    return fixtures.shape_inferrer(core_registry)


@pytest.fixture
def build(core_registry):
    """``build(op_type, inputs, attrs=None)`` -> the Out variable of a one-op program."""
    return fixtures.op_builder(core_registry)


@pytest.fixture
def check(core_registry):
    """``check(op_type, inputs, attrs=None, **kw)``: run a core op through the Executor (CPU)
    and compare every output with its NumPy reference (headrace.core_ops.reference)."""
    from headrace.testing.references import load_references
    return fixtures.checker(core_registry, load_references()[0])


@pytest.fixture
def odd_layouts():
    """``odd_layouts(x)``: ``x`` in layouts the executor never feeds (strided, Fortran-ordered,
    read-only, big-endian, negative strides), each paired with a label."""
    return fixtures.odd_layouts
