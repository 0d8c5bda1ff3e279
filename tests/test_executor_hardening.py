"""Regression tests for programs that reached unchecked memory in the executor (issue 10).

Each case runs in a subprocess: a regression is an interpreter crash (exit 139), which must
fail this test with the case's name rather than take the whole test run down with it."""
import subprocess
import sys
import textwrap

import pytest

_PRELUDE = """
import numpy as np
import headrace as hr
from headrace import layers
from headrace.errors import HeadraceError
from headrace.proto import framework_pb2 as pb


def rebound(program, op_type, slot, index, name):
    # The program as a file would carry it, with one argument of one op renamed: what a
    # crafted or corrupted program file can hold, which append_op itself refuses.
    desc = pb.ProgramDesc()
    desc.ParseFromString(program.serialize_to_string())
    for op in desc.blocks[0].ops:
        for var in (op.inputs if slot[0].isupper() else []):
            if op.type == op_type and var.parameter == slot:
                var.arguments[index] = name
    return hr.Program.parse_from_string(desc.SerializeToString())


main, startup = hr.Program(), hr.Program()
guard = hr.program_guard(main, startup)   # kept: the case builds its ops into main
guard.__enter__()
x = layers.data("x", shape=[3], dtype="float32")
"""

CASES = {
    # @EMPTY@ (autodiff's "no gradient wanted") bound to a required input: the plan mapped it
    # to slot -1 and the loop, built without bounds checks, read values[-1] (exit 139).
    "empty_required_input": """
    y = layers.relu(x)
    bad = rebound(main, "relu", "X", 0, "@EMPTY@")
    try:
        hr.Executor().run(bad, feed={"x": np.ones((2, 3), np.float32)}, fetch_list=[y.name])
    except HeadraceError as e:
        assert "relu" in str(e) and "'X'" in str(e) and "@EMPTY@" in str(e), e
        print("refused")
    """,
    # ... and as one entry of a duplicable input: it reads None, and the kernel refuses it.
    "empty_entry_of_a_list_input": """
    y = layers.sums([x, x])
    bad = rebound(main, "sum", "X", 1, "@EMPTY@")
    try:
        hr.Executor().run(bad, feed={"x": np.ones((2, 3), np.float32)}, fetch_list=[y.name])
    except HeadraceError as e:
        assert "sum" in str(e), e
        print("refused")
    """,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_no_program_reaches_unchecked_memory(case):
    code = _PRELUDE + textwrap.dedent(CASES[case])
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, f"{case}: exit {run.returncode}\n{run.stderr[-2000:]}"
    assert run.stdout.strip().endswith("refused"), f"{case}: ran without an error"


def test_empty_in_an_optional_input_reads_as_unbound():
    # An optional slot bound to @EMPTY@ is the same as an unbound one: layer_norm without
    # Scale normalizes without scaling.
    import numpy as np

    import headrace as hr
    from headrace import layers
    from headrace.proto import framework_pb2 as pb
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[4], dtype="float64")
        y = layers.layer_norm(x, scale=True, shift=False)
    desc = pb.ProgramDesc()
    desc.ParseFromString(main.serialize_to_string())
    for op in desc.blocks[0].ops:
        if op.type == "layer_norm":
            next(v for v in op.inputs if v.parameter == "Scale").arguments[0] = "@EMPTY@"
    bad = hr.Program.parse_from_string(desc.SerializeToString())
    xv = np.arange(8.0).reshape(2, 4)
    (out,) = hr.Executor().run(bad, feed={"x": xv}, fetch_list=[y.name])
    m, v = xv.mean(1, keepdims=True), xv.var(1, keepdims=True)
    np.testing.assert_allclose(out, (xv - m) / np.sqrt(v + 1e-5), rtol=1e-12)


def _dropout_program(seed):
    import headrace as hr
    from headrace import layers
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        z = layers.dropout(layers.data("z", shape=[256], dtype="float32"), 0.5)
    main.random_seed = seed
    return main, z


def test_a_changed_random_seed_is_not_ignored_by_the_cached_plan():
    import numpy as np

    import headrace as hr
    feed = {"z": np.ones((2, 256), np.float32)}
    fresh, z = _dropout_program(2)
    want = hr.Executor().run(fresh, feed=feed, fetch_list=[z])[0]
    main, z = _dropout_program(1)
    exe = hr.Executor()
    first = exe.run(main, feed=feed, fetch_list=[z])[0]
    main.random_seed = 2
    np.testing.assert_array_equal(exe.run(main, feed=feed, fetch_list=[z])[0], want)
    main.random_seed = 1   # back to the first seed: its stream starts over
    np.testing.assert_array_equal(exe.run(main, feed=feed, fetch_list=[z])[0], first)


def test_the_executor_does_not_keep_the_programs_it_ran_alive():
    # A fresh clone per step (as a training loop that re-clones for evaluation does) grew
    # memory without bound: the executor's cache held every program through its plans.
    import gc
    import weakref

    import numpy as np

    import headrace as hr
    from headrace import layers
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[3], dtype="float32")
        loss = layers.mean(layers.fc(x, 4))
        hr.optimizer.SGD(0.1).minimize(loss)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    refs = []
    for _ in range(10):
        p = main.clone()
        exe.run(p, feed={"x": np.ones((2, 3), np.float32)}, fetch_list=[loss.name], scope=scope)
        refs.append(weakref.ref(p))
        del p
    gc.collect()
    assert [r() for r in refs] == [None] * 10
    # ... while a program still in use keeps its plan: the second run prepares nothing.
    exe.run(main, feed={"x": np.ones((2, 3), np.float32)}, fetch_list=[loss.name], scope=scope)
    (plans,) = main._executor_plans.values()
    exe.run(main, feed={"x": np.ones((2, 3), np.float32)}, fetch_list=[loss.name], scope=scope)
    assert main._executor_plans[exe] is plans and len(plans) == 2   # the stamp and one plan
    exe.close()
    assert exe not in main._executor_plans
