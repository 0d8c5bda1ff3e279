"""The kernel contract: kernels never read the IR, KernelInfo's facts, the declared kinds.

The facts a kernel needs (which outputs are wanted, which slots are persistable, which outputs
may alias which inputs) are computed once by the plan and handed over in KernelInfo; how the
plan calls a kernel is the kind it was registered with, never guessed from the object.
"""
import pathlib
import re

import numpy as np
import pytest

import headrace as hr
from headrace.errors import OpError, PluginError
from headrace.ops import In, OpDef, Out, build_registry, hookimpl
from headrace.ops.shape import same_as
from headrace.runtime import Tensor
from headrace.runtime.frame import Frame
from headrace.runtime.kernel_info import KernelInfo, SlotVar, kernel_info
from headrace.testing import build_op

ROOT = pathlib.Path(__file__).resolve().parent.parent


# -- no kernel reads the IR ---------------------------------------------------------------------

def _kernel_modules():
    dirs = sorted(ROOT.glob("plugins/*/headrace_*/kernels"))
    dirs.append(ROOT / "packages" / "headrace" / "headrace" / "core_ops" / "kernels")
    for d in dirs:
        for ext in ("*.py", "*.pyx", "*.pxd"):
            yield from sorted(d.rglob(ext))


# What walking the IR looks like: the Operator behind the info, a variable lookup, a Block
# attribute or import, and the @EMPTY@ name (the info says which outputs are wanted).
FORBIDDEN = [(r"\binfo\.op\b", "info.op"), (r"var_recursive", "var_recursive"),
             (r"\.block\b", ".block"), (r"@EMPTY@", "@EMPTY@"),
             (r"\bheadrace\.framework\b", "headrace.framework")]


def test_the_scan_sees_the_kernel_modules():
    found = {p.relative_to(ROOT).parts[1] for p in _kernel_modules()
             if p.relative_to(ROOT).parts[0] == "plugins"}
    assert {"math", "nn", "optim", "tensor", "control"} <= found
    assert any(p.name == "sum.pyx" and "core_ops" in p.parts for p in _kernel_modules())


@pytest.mark.parametrize("pattern, what", FORBIDDEN, ids=[w for _, w in FORBIDDEN])
def test_no_kernel_module_reads_the_ir(pattern, what):
    hits = [f"{p.relative_to(ROOT)}:{n}" for p in _kernel_modules()
            for n, line in enumerate(p.read_text().splitlines(), 1) if re.search(pattern, line)]
    assert not hits, f"kernel modules mention {what} (use KernelInfo's facts): {hits}"


# -- KernelInfo's facts -------------------------------------------------------------------------

def _grad_op(outputs):
    """An elementwise_add_grad op of a hand-made block with the given output bindings."""
    prog = hr.Program()
    b = prog.global_block()
    for n, shape in (("x", [2, 3]), ("y", [3]), ("g", [2, 3])):
        b.create_var(name=n, shape=shape, dtype="float32")
    for names in outputs.values():
        for n in names:
            if n != "@EMPTY@":
                b.create_var(name=n, shape=[2, 3], dtype="float32")
    return b.append_op("elementwise_add_grad", {"X": ["x"], "Y": ["y"], "Out@GRAD": ["g"]},
                       outputs, {"axis": -1})


def test_wanted_skips_empty_and_unbound_outputs():
    info = kernel_info(_grad_op({"X@GRAD": ["@EMPTY@"]}))
    assert info.wanted("X@GRAD") == [False] and not info.wants("X@GRAD")
    assert info.wanted("Y@GRAD") == [] and not info.wants("Y@GRAD")  # unbound
    assert info.n_outputs("X@GRAD") == 1 and info.n_outputs("Y@GRAD") == 0
    info = kernel_info(_grad_op({"X@GRAD": ["dx"], "Y@GRAD": ["dy"]}))
    assert info.wanted("X@GRAD") == [True] and info.wants("Y@GRAD")
    assert info.outputs["X@GRAD"][0] == SlotVar("dx", "float32", (2, 3), 0, False)


def test_wanted_per_variable_of_a_duplicable_output():
    info = KernelInfo("concat_grad", {}, outputs={
        "X@GRAD": (SlotVar("a@GRAD"), None, SlotVar("c@GRAD"))})
    assert info.wanted("X@GRAD") == [True, False, True] and info.wants("X@GRAD")
    assert info.n_outputs("X@GRAD") == 3


def test_wanted_decides_what_a_grad_kernel_computes():
    from headrace_math.kernels.cpu.elementwise import ElementwiseGrad
    g = np.ones((2, 3), np.float32)
    op = _grad_op({"X@GRAD": ["@EMPTY@"], "Y@GRAD": ["dy"]})
    dx, dy = ElementwiseGrad(0, "elementwise_add_grad", {"axis": -1}, kernel_info(op))(
        g, g[0], g)
    assert dx is None and dy.shape == (3,)
    dx, dy = ElementwiseGrad(0, "elementwise_add_grad", {"axis": -1})(g, g[0], g)
    assert dx is not None and dy is not None  # called without an info: everything


def _sgd(param_out="p", persistable=True):
    prog = hr.Program()
    b = prog.global_block()
    for n in ("p", "g", "other"):
        b.create_var(name=n, shape=[4], dtype="float32", persistable=persistable and n == "p")
    b.create_var(name="lr", shape=[1], dtype="float32")
    return b.append_op("sgd", {"Param": ["p"], "Grad": ["g"], "LearningRate": ["lr"]},
                       {"ParamOut": [param_out]})


def test_persistable_reads_inputs_and_outputs():
    info = kernel_info(_sgd())
    assert info.persistable("Param") and info.persistable("ParamOut")
    assert not info.persistable("Grad") and not info.persistable("NoSuchSlot")
    assert not kernel_info(_sgd(persistable=False)).persistable("Param")


def test_in_place_needs_the_same_persistable_variable():
    assert kernel_info(_sgd()).in_place("Param", "ParamOut")
    assert not kernel_info(_sgd(persistable=False)).in_place("Param", "ParamOut")
    assert not kernel_info(_sgd(param_out="other")).in_place("Param", "ParamOut")
    assert not kernel_info(_sgd()).in_place("Grad", "ParamOut")


@pytest.mark.parametrize("persistable, alias", [([], True), (["x_0"], False),
                                                 (["out_out_0"], False)])
def test_may_alias_unless_a_side_is_persistable(persistable, alias):
    prog, op = build_op("reshape2", {"X": ([6], "float32")}, attrs={"shape": [2, 3]})
    for name in persistable:
        prog.global_block().var(name).persistable = True
    info = kernel_info(op)
    assert info.may_alias("X", "Out") is alias
    from headrace_tensor.kernels.cpu.reshape import Reshape2
    x = np.arange(6, dtype="float32")
    out, _ = Reshape2({"shape": [2, 3]}, info)(x)
    assert np.shares_memory(out, x) is alias


def test_dtypes_shapes_and_attributes():
    info = kernel_info(_sgd())
    assert info.op_type == "sgd" and info.in_dtypes["Param"] == ["float32"]
    assert info.out_dtypes == {"ParamOut": ["float32"]} and info.out_shapes["ParamOut"] == [(4,)]
    assert info.n_inputs("Param") == 1 and info.n_inputs("Nothing") == 0
    assert not hasattr(info, "op"), "kernels get facts, not the Operator"


def test_sub_block_facts():
    prog = hr.Program()
    b = prog.global_block()
    for n in ("c", "i"):
        b.create_var(name=n, shape=[1], dtype="bool" if n == "c" else "int64")
    body = prog.create_block()
    body.append_op("increment", {"X": ["i"]}, {"Out": ["i"]}, {"step": 1.0})
    prog.rollback()
    op = b.append_op("while", {"X": ["i"], "Condition": ["c"]},
                     {"Out": ["i"], "StepScopes": [b.create_var(
                         name="steps", type="step_scopes").name]},
                     {"sub_block": body, "is_test": False})
    info = kernel_info(op)
    assert not info.sub_block_writes("sub_block", "Condition")
    assert info.sub_block_writes("sub_block", "X")
    with pytest.raises(ValueError, match="no plan is being prepared"):
        info.subplan("sub_block")
    with pytest.raises(OpError, match=r"never writes Condition 'c'"):
        hr.Executor().run(prog, feed={"c": np.array([True]), "i": np.array([0])},
                          fetch_list=["i"])


# -- declared kinds -----------------------------------------------------------------------------

SEEN = {}


class LoDAppend:
    """A LoD kernel: Out = X with one more sequence level (each row its own sequence)."""

    def __init__(self, attrs, info):
        SEEN["lod_info"] = info

    def __call__(self, x):
        SEEN["lod_arg"] = x
        rows = x.data.shape[0]
        return (Tensor(x.data * 2, x.lod + [list(range(rows + 1))]),)


class CopyFrame:
    """A frame kernel: Out = X (with X's LoD), through the Frame."""

    def __init__(self, attrs, info):
        pass

    def __call__(self, frame):
        SEEN["frame"] = frame
        frame.set_output("Out", frame.input("X") + 1, frame.lod("X"))


class OldStyle:
    """A kernel written for the LoD or frame convention (``old`` names the attribute that used
    to say so), registered as an array kernel."""
    old = "lod_kernel"

    def __init__(self, attrs, info):
        setattr(self, self.old, True)

    def __call__(self, x):
        return (x,)


class OldFrame(OldStyle):
    old = "frame_kernel"


def _plugin(kernels):
    class Plugin:
        @staticmethod
        @hookimpl
        def headrace_register_ops(registry):
            for t in kernels:
                registry.add_op(OpDef(t, inputs=[In("X")], outputs=[Out("Out")],
                                      infer=same_as("X")))

        @staticmethod
        @hookimpl
        def headrace_register_kernels(registry):
            for t, (maker, kind) in kernels.items():
                registry.add_kernel(t, "cpu", maker, kind=kind)
    return Plugin


def _run(registry, op_type, x, lod_level=1):
    prog = hr.Program(registry=registry)
    b = prog.global_block()
    b.create_var(name="x", shape=[-1, 2], dtype="float32", lod_level=lod_level)
    b.create_var(name="out", shape=[-1, 2], dtype="float32", lod_level=2)
    b.append_op(op_type, {"X": ["x"]}, {"Out": ["out"]})
    return hr.Executor().run(prog, feed={"x": x}, fetch_list=["out"], return_numpy=False)[0]


def test_a_lod_kernel_gets_and_returns_tensors():
    reg = build_registry([("contract-lod", _plugin({"k_lod": (LoDAppend, "lod")}))],
                         autoload=False)
    assert reg.kernel("k_lod", "cpu").kind == "lod"
    x = np.arange(8, dtype="float32").reshape(4, 2)
    out = _run(reg, "k_lod", Tensor(x, [[0, 1, 4]]))
    assert isinstance(SEEN["lod_arg"], Tensor) and SEEN["lod_arg"].lod == [[0, 1, 4]]
    np.testing.assert_array_equal(out.data, x * 2)
    assert out.lod == [[0, 1, 4], [0, 1, 2, 3, 4]]
    assert isinstance(SEEN["lod_info"], KernelInfo)


def test_a_frame_kernel_gets_a_frame():
    reg = build_registry([("contract-frame", _plugin({"k_frame": (CopyFrame, "frame")}))],
                         autoload=False)
    x = np.ones((3, 2), "float32")
    out = _run(reg, "k_frame", Tensor(x, [[0, 3]]))
    assert isinstance(SEEN["frame"], Frame) and SEEN["frame"].op_type == "k_frame"
    np.testing.assert_array_equal(out.data, x + 1)
    assert out.lod == [[0, 3]]


@pytest.mark.parametrize("maker", [OldStyle, OldFrame])
def test_old_attributes_on_an_array_kernel_are_refused(maker):
    reg = build_registry([("contract-old", _plugin({"k_old": (maker, "array")}))],
                         autoload=False)
    with pytest.raises(PluginError, match=rf"plugin 'contract-old'.*k_old/cpu sets {maker.old} "
                                          r"= True but is registered as an array kernel"):
        _run(reg, "k_old", np.ones((2, 2), "float32"), lod_level=0)


def test_an_unknown_kind_is_the_plugins_error():
    with pytest.warns(hr.ops.PluginWarning, match=r"'contract-bad' failed"):
        reg = build_registry([("contract-bad", _plugin({"k_bad": (CopyFrame, "tensor")}))],
                             autoload=False)
    assert "k_bad" not in reg
    assert re.search(r"plugin 'contract-bad'.*kind must be one of array, lod, frame, got "
                     r"'tensor'", str(reg.failed["contract-bad"]))


def test_an_unknown_kind_in_kernels_is_reported_for_that_package(tmp_path, monkeypatch):
    pkg = tmp_path / "contract_kernels"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "k.py").write_text("KERNELS = [('k_pkg', lambda attrs, info: None, None, 'tensor')]\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    class Plugin:
        @staticmethod
        @hookimpl
        def headrace_register_kernels(registry):
            registry.add_kernel_package("contract_kernels", "cpu")
    reg = build_registry([("contract-pkg", Plugin)], autoload=False)
    with pytest.warns(hr.ops.PluginWarning):
        with pytest.raises(hr.errors.KernelNotFoundError,
                           match=r"contract-pkg.*kind must be one of array, lod, frame"):
            reg.kernel("k_pkg", "cpu")


def test_the_frame_reads_and_writes_by_slot_name():
    from headrace.runtime.frame import FrameLayout
    values, lods = [None, np.ones(2), None, "old"], {1: [[0, 2]]}
    frame = Frame(FrameLayout("op", {"X": (1,), "Y": ()}, {"Out": (2,), "Skip": (-1,)}),
                  values, lods)
    assert frame.input("Y") is None and frame.inputs("Y") == []
    assert frame.tensor("X").lod == [[0, 2]] and frame.output("Out") is None
    frame.set_output("Out", 5, [[0, 1]])
    frame.set_output("Skip", 7)  # an @EMPTY@ output: not stored
    assert values == [None, values[1], 5, "old"] and lods[2] == [[0, 1]]
    frame.set_output("Out", 6)
    assert 2 not in lods  # a value without LoD clears the old one
    with pytest.raises(KeyError, match=r"op: the definition has no input slot 'Z'"):
        frame.input("Z")
    with pytest.raises(ValueError, match=r"2 values for output 'Out', which is bound to 1"):
        frame.set_outputs("Out", [1, 2])


class _Liar:
    """A kernel whose result does not match what its op declares: ``bad`` says how."""
    bad = "dtype"

    def __init__(self, attrs, info):
        pass

    def __call__(self, x):
        x = np.asarray(x)
        return ((x.astype("float64") if self.bad == "dtype" else x.reshape(-1)),)


class _RankLiar(_Liar):
    bad = "rank"


@pytest.mark.parametrize("maker, found", [(_Liar, "float64 of shape [3, 2]"),
                                          (_RankLiar, "float32 of shape [6]")])
def test_a_kernel_returning_the_wrong_dtype_or_rank_is_stopped_at_its_op(maker, found):
    # Such a value used to flow on into the next ops (a plugin bug surfacing far away, or as
    # wrong numbers). The executor checks outputs on the first run of each feed signature.
    reg = build_registry([("contract-liar", _plugin({"k_liar": (maker, "array")}))],
                         autoload=False)
    x = np.ones((3, 2), "float32")
    with pytest.raises(hr.OpError, match="k_liar.*output variable 'out' that does not match") \
            as e:
        _run(reg, "k_liar", x, lod_level=0)
    assert "float32 of rank 2" in str(e.value) and found in str(e.value)


# -- the plan's infos ---------------------------------------------------------------------------

@pytest.fixture
def plan_infos(monkeypatch):
    """The list of every info a plan makes while the test runs (runtime.plan._PlanInfo)."""
    from headrace.runtime import plan as plan_mod
    made = []

    class Recorded(plan_mod._PlanInfo):
        def __init__(self, *args):
            super().__init__(*args)
            made.append(self)

    monkeypatch.setattr(plan_mod, "_PlanInfo", Recorded)
    return made


def test_the_plans_infos_answer_as_kernel_info_does(plan_infos):
    """A plan makes its infos' facts when a kernel asks (runtime.kernel_info._PlanInfo): every
    question, on every op of a training program with a loop (@EMPTY@ gradients, in-place
    optimizer updates, persistable and fed variables, a sub-block), gets kernel_info's
    answer."""
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1, 4], dtype="float32")
        h = hr.layers.fc(hr.layers.fc(x, size=4, act="relu"), size=3)
        h = hr.layers.elementwise_add(h, hr.layers.fc(x, size=3))
        loss = hr.layers.mean(hr.layers.concat([h, x], axis=1))   # x@GRAD: @EMPTY@
        hr.optimizer.SGD(learning_rate=0.1).minimize(loss)
        i = hr.layers.fill_constant([1], "int64", 0)
        n = hr.layers.fill_constant([1], "int64", 2)
        cond = hr.layers.less_than(i, n)
        with hr.layers.While(cond).block():
            hr.layers.increment(i)
            hr.layers.less_than(i, n, cond=cond)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    plan_infos.clear()
    exe.run(main, feed={"x": np.ones((2, 4), np.float32)}, fetch_list=[loss], scope=scope)
    assert {info.op_type for info in plan_infos} >= {"mul_grad", "sgd", "while", "increment"}
    empty = 0
    for info in plan_infos:
        loc = info.location
        op = main.block(loc["block_idx"]).ops[loc["op_idx"]]
        ref = kernel_info(op, seed=info.seed)
        assert loc == ref.location and info.attrs == ref.attrs, op.type
        ins = [s.name for s in op.opdef.inputs] + ["NoSuchSlot"]
        outs = [s.name for s in op.opdef.outputs] + ["NoSuchSlot"]
        for s in ins:
            assert info.n_inputs(s) == ref.n_inputs(s), (op.type, s)
            for o in outs:
                assert info.in_place(s, o) == ref.in_place(s, o), (op.type, s, o)
                assert info.may_alias(s, o) == ref.may_alias(s, o), (op.type, s, o)
        for s in outs:
            assert info.n_outputs(s) == ref.n_outputs(s), (op.type, s)
            assert info.wanted(s) == ref.wanted(s) and info.wants(s) == ref.wants(s)
            empty += info.wanted(s).count(False)
        for s in set(ins) | set(outs):
            assert info.persistable(s) == ref.persistable(s), (op.type, s)
        assert (info.inputs, info.outputs) == (ref.inputs, ref.outputs), op.type
        assert (info.in_dtypes, info.out_dtypes, info.out_shapes) == \
            (ref.in_dtypes, ref.out_dtypes, ref.out_shapes), op.type
        for attr in ("sub_block", "no_such_attr"):
            for s in ins:
                assert info.sub_block_writes(attr, s) == ref.sub_block_writes(attr, s)
    assert empty, "the program binds no @EMPTY@ gradient: the test lost its point"


def test_a_seeded_programs_infos_derive_their_seeds_when_read(monkeypatch, plan_infos):
    """In a program with a random_seed, an op without a seed of its own gets one derived from
    (random_seed, block index, op index) (rnn's dropout reads it), plan_infos when a kernel reads
    info.seed: preparing a 1603-op program plan_infos a SeedSequence for every op (+19 ms)."""
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1, 4], dtype="float32")
        loss = hr.layers.mean(hr.layers.fc(x, size=3))
    main.random_seed = 7
    sequences = []
    real = np.random.SeedSequence
    monkeypatch.setattr(np.random, "SeedSequence",
                        lambda *a, **k: sequences.append(a) or real(*a, **k))
    hr.Executor().run(startup)
    plan_infos.clear()
    hr.Executor().run(main, feed={"x": np.ones((2, 4), np.float32)}, fetch_list=[loss])
    assert plan_infos and not sequences   # no kernel of mul, elementwise_add, mean reads its seed
    for info in plan_infos:
        loc = info.location
        want = int(real([7, loc["block_idx"], loc["op_idx"]]).generate_state(1)[0])
        assert info.seed == want, info.op_type
    # (the suite's conftest may replay the run through eval: a second plan, the same seeds)
    assert len({info.seed for info in plan_infos}) == \
        len({info.location["op_idx"] for info in plan_infos})
