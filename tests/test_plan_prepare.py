"""What plan preparation reads once and shares: attributes decoded once per distinct set.

``Plan._attrs`` keys the attributes it decoded by the op's attribute entries on the wire
(``runtime._attr_wire.attr_entries``); ops with equal entries get equal, separate dicts.
"""
import numpy as np

import headrace as hr
from headrace.proto import framework_pb2 as pb
from headrace.runtime import plan as plan_mod
from headrace.runtime._attr_wire import attr_entries
from headrace.runtime.place import CPUPlace


def _loop_program():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        h = hr.layers.data("x", shape=[-1, 4], dtype="float32")
        for _ in range(3):
            h = hr.layers.fc(h, size=4, act="relu")
        loss = hr.layers.mean(hr.layers.reshape(h, [-1, 2, 2]))
        hr.optimizer.Adam(learning_rate=0.1).minimize(loss)
        i = hr.layers.fill_constant([1], "int64", 0)
        n = hr.layers.fill_constant([1], "int64", 2)
        cond = hr.layers.less_than(i, n)
        with hr.layers.While(cond).block():
            hr.layers.increment(i)
            hr.layers.less_than(i, n, cond=cond)
    return main, startup, loss


def test_attr_entries_are_the_ops_attributes_on_the_wire():
    main, startup, _ = _loop_program()
    ops = [op for prog in (main, startup) for b in prog.blocks for op in b.ops]
    assert any(op.type == "while" for op in ops)
    for op in ops:
        wire = op.desc.SerializeToString()
        assert list(pb.OpDesc.FromString(attr_entries(wire)).attrs) == list(op.desc.attrs)
    # Entries apart (another field between them) and no entries at all.
    a = pb.OpDesc(type="t")
    a.attrs.add(name="a", type=pb.INT, i=1)
    b = pb.OpDesc()
    b.attrs.add(name="b", type=pb.INT, i=2)
    wire = a.SerializeToString() + pb.OpDesc(type="u").SerializeToString() + \
        b.SerializeToString()
    assert [x.name for x in pb.OpDesc.FromString(attr_entries(wire)).attrs] == ["a", "b"]
    assert attr_entries(pb.OpDesc(type="t").SerializeToString()) == b""


def test_attr_entries_of_malformed_wire_is_none():
    wire = _loop_program()[0].global_block().ops[0].desc.SerializeToString()
    for bad in (wire[:-1], wire + b"\x80", b"\x23\x00", b"\x22\x05ab", b"\xff" * 11):
        assert attr_entries(bad) is None, bad


def test_plan_attributes_equal_the_ops_and_are_not_shared(monkeypatch):
    main, startup, loss = _loop_program()
    seen = []
    real = plan_mod.Plan._attrs

    def spy(self, op):
        attrs = real(self, op)
        seen.append((op, attrs))
        return attrs

    monkeypatch.setattr(plan_mod.Plan, "_attrs", spy)
    plan = plan_mod.prepare(main.global_block(), CPUPlace(), main.registry)
    # The three layers' forward and backward ops share theirs (Adam's name their variables).
    assert len(plan._attr_sets) <= len(seen) - 2 * 6
    for op, attrs in seen:
        assert attrs == op.attrs, op.type
    assert len({id(a) for _, a in seen}) == len(seen)   # a dict per op
    mul = [a for op, a in seen if op.type == "mul"]
    assert len(mul) >= 3 and mul[0] == mul[1]
    mul[0]["op_callstack"].append("changed by a kernel maker")
    mul[0]["x_num_col_dims"] = 7
    assert mul[1] == seen[[id(a) for _, a in seen].index(id(mul[1]))][0].attrs
    # The program still runs as before with the attributes read this way.
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    (got,) = exe.run(main, feed={"x": np.ones((2, 4), np.float32)}, fetch_list=[loss],
                     scope=scope)
    assert np.isfinite(got).all()
