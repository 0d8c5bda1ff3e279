"""Plan preparation's refusals: what a program that cannot run is told when its plan is prepared
(the per-op loop is compiled, runtime/_prepare.pyx; the messages and locations are the plan's).

Each error names the op (type, block, index in its block: ops skipped by the plan, the feed and
fetch ops and the ops pruning leaves out, still count) and what is wrong with it."""
import numpy as np
import pytest

import headrace as hr
from headrace.errors import HeadraceError, KernelNotFoundError, OpError
from headrace.ops import In, OpDef, Out, build_registry, hookimpl
from headrace.ops.shape import same_as


def _program(registry=None):
    """feed(x) -> scale -> s0 -> relu -> r -> fetch: ops 0 (feed) to 3 (fetch)."""
    prog = hr.Program(registry=registry) if registry is not None else hr.Program()
    b = prog.global_block()
    x = b.create_var(name="x", shape=[-1, 3], dtype="float32", need_check_feed=True)
    b.create_var(name="feed", type="feed_minibatch", persistable=True)
    b.create_var(name="fetch", type="fetch_list", persistable=True)
    b.append_op("feed", {"X": ["feed"]}, {"Out": [x]}, {"col": 0})
    b.append_op("scale", {"X": x}, {"Out": "s0"}, {"scale": 2.0})
    b.append_op("relu", {"X": "s0"}, {"Out": "r"})
    b.append_op("fetch", {"X": ["r"]}, {"Out": ["fetch"]}, {"col": 0})
    return prog


def _run(prog, fetch="r"):
    return hr.Executor().run(prog, feed={"x": np.ones((2, 3), np.float32)},
                             fetch_list=[fetch], scope=hr.Scope())


def _located(e, op_type, op_idx):
    assert (e.op_type, e.block_idx, e.op_idx) == (op_type, 0, op_idx), str(e)
    assert f"op '{op_type}' (block 0, op #{op_idx})" in str(e)


def test_the_program_runs_as_built():
    np.testing.assert_allclose(_run(_program())[0], np.full((2, 3), 2.0))


@pytest.mark.parametrize("role", ["input", "output"])
def test_an_undeclared_variable_is_refused_at_its_op(role):
    prog = _program()
    relu = prog.global_block().ops[2]
    if role == "input":
        relu.rename_input("s0", "nope")
    else:
        relu.rename_output("r", "nope")
    with pytest.raises(OpError, match=f"{role} variable 'nope' is not declared in block 0 "
                                      f"or its ancestors") as e:
        _run(prog, fetch="s0")
    _located(e.value, "relu", 2)


def test_a_required_input_bound_to_empty_is_refused():
    prog = _program()
    prog.global_block().ops[2].rename_input("s0", "@EMPTY@")
    with pytest.raises(OpError, match="required input slot 'X' is bound to '@EMPTY@', the "
                                      "marker of a gradient nobody wants") as e:
        _run(prog, fetch="s0")
    _located(e.value, "relu", 2)


def test_an_op_no_plugin_defines_is_refused_at_its_op():
    prog = _program()
    prog.global_block().ops[2].desc.type = "no_such_op"
    parsed = hr.Program.parse_from_string(prog.serialize_to_string())
    assert parsed.global_block().ops[2].opdef is None
    with pytest.raises(OpError, match="no installed plugin defines this op type, so it cannot "
                                      "run") as e:
        _run(parsed, fetch="s0")
    _located(e.value, "no_such_op", 2)


class _Raises:
    """A kernel maker that raises ``error`` (made by the plan: the op's kernel)."""
    error = None

    def __init__(self, attrs, info=None):
        raise type(self).error


def _plugin_registry(maker, dtypes=None):
    class Plugin:
        @staticmethod
        @hookimpl
        def headrace_register_ops(registry):
            registry.add_op(OpDef("k_prep", inputs=[In("X")], outputs=[Out("Out")],
                                  infer=same_as("X")))

        @staticmethod
        @hookimpl
        def headrace_register_kernels(registry):
            registry.add_kernel("k_prep", "cpu", maker, dtypes=dtypes)
    return build_registry([("prep-test", Plugin)], autoload=True)   # beside the installed


def _kernel_program(registry):
    """Ops 0-1 that run first (scale, relu), then k_prep (op #2)."""
    prog = hr.Program(registry=registry)
    b = prog.global_block()
    x = b.create_var(name="x", shape=[-1, 3], dtype="float32", need_check_feed=True)
    b.append_op("scale", {"X": x}, {"Out": "s0"}, {"scale": 2.0})
    b.append_op("relu", {"X": "s0"}, {"Out": "r"})
    b.append_op("k_prep", {"X": "r"}, {"Out": "k"})
    return prog


@pytest.mark.parametrize("error, cls, message", [
    (ValueError("bad attribute"), OpError,
     r"preparing its kernel failed: ValueError: bad attribute"),
    (OpError("the maker's own words"), OpError, r"the maker's own words"),
])
def test_a_kernel_makers_error_names_the_op(error, cls, message):
    class Maker(_Raises):
        pass
    Maker.error = error
    prog = _kernel_program(_plugin_registry(Maker))
    with pytest.raises(cls, match=message) as e:
        _run(prog, fetch="k")
    _located(e.value, "k_prep", 2)


def test_a_headrace_error_of_a_maker_passes_as_it_is():
    class Maker(_Raises):
        error = HeadraceError("plugin trouble")
    prog = _kernel_program(_plugin_registry(Maker))
    with pytest.raises(HeadraceError, match="^plugin trouble$") as e:
        _run(prog, fetch="k")
    assert type(e.value) is HeadraceError


def test_no_kernel_for_the_dtype_names_the_op():
    prog = _kernel_program(_plugin_registry(lambda attrs, info=None: None, ["float64"]))
    with pytest.raises(KernelNotFoundError, match="no kernel for device 'cpu' and dtype "
                                                  "float32") as e:
        _run(prog, fetch="k")
    _located(e.value, "k_prep", 2)


def test_pruned_ops_are_not_prepared_and_indices_stay_the_blocks():
    # eval of s0 prepares scale alone: relu's undeclared input is never looked at.
    prog = _program()
    prog.global_block().ops[2].rename_input("s0", "nope")
    s0 = prog.global_block().var("s0")
    got = hr.Executor().eval(s0, feed={"x": np.ones((2, 3), np.float32)}, scope=hr.Scope())
    np.testing.assert_allclose(got, np.full((2, 3), 2.0))
