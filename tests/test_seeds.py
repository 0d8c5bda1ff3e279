"""Program seeds written into random ops (issue 12 item 5): a startup program serialized to
bytes and parsed in another process initializes bit for bit as in the driver.

The rules are framework/seeds.py's: an op built with seed 0 in a program with a
``random_seed`` gets a seed derived from it (and its rank) in its ``seed`` attribute; an op's
own seed is kept; ``random_seed`` 0 writes nothing (Fluid's "0 = random").
"""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import headrace as hr
from headrace import ProgramError
from headrace.errors import OpDefinitionError
from headrace.framework import seeds
from headrace.ops import Attr, OpDef, Out

L = hr.layers

# Parses a startup program from argv[1], runs it and saves every persistable to argv[2]: the
# user's model-building code never runs in this process.
WORKER = textwrap.dedent("""
    import sys
    import numpy as np
    import headrace as hr
    startup = hr.Program.parse_from_string(open(sys.argv[1], "rb").read())
    scope = hr.Scope()
    hr.Executor(hr.CPUPlace()).run(startup, scope=scope)
    names = [v.name for v in startup.global_block().vars.values() if v.persistable]
    np.savez(sys.argv[2], **{n: np.array(scope.find_var(n)) for n in names})
""")


def build(random_seed, dropout=False):
    main, startup = hr.Program(), hr.Program()
    main.random_seed = startup.random_seed = random_seed
    with hr.program_guard(main, startup), hr.unique_name.guard():
        img = L.data("img", shape=[-1, 1, 6, 6], dtype="float32")
        words = L.data("words", shape=[-1, 1], dtype="int64")
        h = L.conv2d(img, num_filters=3, filter_size=3, act="relu")
        h = L.fc(h, size=8, param_attr=hr.ParamAttr(initializer=hr.initializer.Normal()))
        h = L.fc(h, size=8)      # the same shape and initializer as the next one
        h = L.fc(h, size=8)
        e = L.embedding(words, size=[20, 8])
        if dropout:
            h = L.dropout(h, 0.5)
        out = L.elementwise_add(h, L.reshape(e, [-1, 8]))
    return main, startup, out


def driver_values(startup):
    scope = hr.Scope()
    hr.Executor(hr.CPUPlace()).run(startup, scope=scope)
    return {v.name: np.array(scope.find_var(v.name))
            for v in startup.global_block().vars.values() if v.persistable}


def worker_values(startup, tmp_path):
    wire = tmp_path / "startup.pb"
    wire.write_bytes(startup.serialize_to_string())
    out = tmp_path / "values.npz"
    subprocess.run([sys.executable, "-c", WORKER, str(wire), str(out)], check=True,
                   timeout=120)
    with np.load(out) as f:
        return dict(f)


def seeds_of(program):
    return [(b.idx, op.type, op.attr("seed")) for b in program.blocks for op in b.ops
            if op.has_attr("seed")]


def test_a_parsed_startup_program_initializes_as_in_the_driver(tmp_path):
    _, startup, _ = build(1234)
    here, there = driver_values(startup), worker_values(startup, tmp_path)
    assert sorted(here) == sorted(there) and len(here) >= 8
    for name in here:
        assert here[name].tobytes() == there[name].tobytes(), name
    # Parameters of one shape and initializer still start apart.
    weights = [v for n, v in here.items() if v.shape == (8, 8)]
    assert len(weights) == 2 and not np.array_equal(*weights)


def test_an_unseeded_startup_program_draws_fresh_values_in_each_process(tmp_path):
    """random_seed 0 keeps Fluid's meaning (random): nothing is written, and the worker's draw
    differs from the driver's (the check above is not true by construction)."""
    _, startup, _ = build(0)
    assert {s for _, _, s in seeds_of(startup)} == {0}
    here, there = driver_values(startup), worker_values(startup, tmp_path)
    randomized = [n for n in here if np.unique(here[n]).size > 1]
    assert randomized and all(not np.array_equal(here[n], there[n]) for n in randomized)


def test_two_builds_with_one_random_seed_get_the_same_seeds():
    (m1, s1, _), (m2, s2, _) = build(7, dropout=True), build(7, dropout=True)
    assert seeds_of(s1) == seeds_of(s2) and seeds_of(m1) == seeds_of(m2)
    assert s1.serialize_to_string() == s2.serialize_to_string()
    assert m1.serialize_to_string() == m2.serialize_to_string()
    written = [s for _, _, s in seeds_of(s1) + seeds_of(m1)]
    assert all(0 < s < 2**31 for s in written) and len(set(written)) == len(written)
    other = [s for _, _, s in seeds_of(build(8, dropout=True)[1])]
    assert not set(other) & set(written)


def test_dropout_takes_the_main_programs_seed_and_keeps_drawing_new_masks(tmp_path):
    main, startup, out = build(5, dropout=True)
    (op,) = [o for o in main.global_block().ops if o.type == "dropout"]
    # fix_seed stays false: one fixed mask for every step would not train (Fluid sets it).
    assert op.attr("seed") != 0 and op.attr("fix_seed") is False
    again = hr.Program.parse_from_string(main.serialize_to_string())
    feed = {"img": np.ones((2, 1, 6, 6), "float32"), "words": np.array([[1], [2]])}

    def masks(program):
        scope, exe = hr.Scope(), hr.Executor(hr.CPUPlace())
        exe.run(startup, scope=scope)
        mask = op.output("Mask")[0]
        return [exe.run(program, feed=feed, fetch_list=[mask], scope=scope)[0]
                for _ in range(3)]

    first, parsed = masks(main), masks(again)
    for a, b in zip(first, parsed):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], first[1])


def test_an_ops_own_seed_is_kept():
    main, startup = hr.Program(), hr.Program()
    startup.random_seed = main.random_seed = 9
    with hr.program_guard(main, startup):
        u = L.uniform_random([3, 4], seed=77)
        d = L.dropout(u, 0.5, seed=78)
        w = L.create_parameter([4], "float32", attr=hr.ParamAttr(
            initializer=hr.initializer.Uniform(seed=79)))
    assert [s for _, _, s in seeds_of(main)] == [77, 78]
    assert [s for _, _, s in seeds_of(startup)] == [79]
    main.random_seed = 10          # a later seed changes what the program wrote, only
    assert [s for _, _, s in seeds_of(main)] == [77, 78]
    assert d.op.attr("fix_seed") is True and w.name in startup.global_block().vars


def test_a_seed_set_after_building_is_written_too_and_zero_clears_it():
    main, startup, _ = build(0, dropout=True)
    startup.random_seed = 1234
    assert seeds_of(startup) == seeds_of(build(1234)[1])   # as if set before building
    first = seeds_of(startup)
    startup.random_seed = 99
    assert all(a[2] != b[2] for a, b in zip(first, seeds_of(startup)))
    startup.random_seed = 1234
    assert seeds_of(startup) == first
    startup.random_seed = 0
    assert {s for _, _, s in seeds_of(startup)} == {0}
    main.random_seed = 3
    assert all(s for _, _, s in seeds_of(main))


def test_clones_keep_the_seeds_and_what_the_program_wrote():
    main, _, _ = build(5, dropout=True)
    test_program = main.clone(for_test=True)
    assert test_program.random_seed == 5 and seeds_of(test_program) == seeds_of(main)
    clone = main.clone()
    clone.random_seed = 6
    assert seeds_of(clone) == seeds_of(build(6, dropout=True)[0])
    assert seeds_of(main) == seeds_of(build(5, dropout=True)[0])   # the original untouched


def test_a_parsed_programs_seeds_are_its_ops_own():
    """A parsed program does not know which seeds its builder derived: setting its
    random_seed writes only those still 0, so a worker cannot disturb the driver's."""
    _, startup, _ = build(21)
    parsed = hr.Program.parse_from_string(startup.serialize_to_string())
    assert parsed.random_seed == 0 and seeds_of(parsed) == seeds_of(startup)
    parsed.random_seed = 22
    assert seeds_of(parsed) == seeds_of(startup)
    block = parsed.global_block()
    block.create_var(name="extra", shape=[3], dtype="float32", persistable=True)
    new = block.append_op("gaussian_random", {}, {"Out": "extra"}, {"shape": [3]})
    assert new.attr("seed") not in {s for _, _, s in seeds_of(startup)} | {0}


def test_program_seeds_are_ordinary_int_attributes_on_the_wire():
    """Paddle reads these programs: the seed is its own int ``seed`` attribute; nothing else in
    the desc changes."""
    _, seeded, _ = build(3)
    _, plain, _ = build(0)
    a, b = seeded.desc, plain.desc
    assert len(a.blocks[0].ops) == len(b.blocks[0].ops)
    for x, y in zip(a.blocks[0].ops, b.blocks[0].ops):
        diff = {at.name for at in x.attrs if at.SerializeToString() not in
                {bt.SerializeToString() for bt in y.attrs}}
        assert diff <= {"seed"} and (diff == {"seed"}) == (x.type in ("uniform_random",
                                                                     "gaussian_random"))
        for at in x.attrs:
            if at.name == "seed":
                assert at.type == 0 and at.HasField("i")   # AttrType INT


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True, None])
def test_a_bad_random_seed_is_refused(bad):
    prog = hr.Program()
    with pytest.raises(ProgramError, match="random_seed must be an int >= 0"):
        prog.random_seed = bad
    assert prog.random_seed == 0


def test_derive_is_a_pure_function_of_its_words():
    assert seeds.derive(1, 0, "uniform_random", 0) == seeds.derive(1, 0, "uniform_random", 0)
    words = [(1, 0, "uniform_random", 0), (2, 0, "uniform_random", 0),
             (1, 1, "uniform_random", 0), (1, 0, "gaussian_random", 0),
             (1, 0, "uniform_random", 1)]
    assert len({seeds.derive(*w) for w in words}) == len(words)


def test_seed_attr_must_name_an_int_attribute():
    with pytest.raises(OpDefinitionError, match="seed_attr 'seed' must name one of its int"):
        OpDef("noisy", outputs=[Out("Out")], attrs=[Attr("seed", "float", 0.0)],
              infer=lambda ctx: None, seed_attr="seed")
    with pytest.raises(OpDefinitionError, match="seed_attr 'rng' must name"):
        OpDef("noisy", outputs=[Out("Out")], infer=lambda ctx: None, seed_attr="rng")
