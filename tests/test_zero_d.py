"""0-D tensors as Paddle 3 has them, across the framework: a 0-D loss trains with every
optimizer, clip, regularizer and learning-rate schedule exactly as a one-element loss of
another rank does; a 0-D learning-rate Variable (Paddle 3's) works like a number; Fluid
programs that declare [1] for their losses still train; 0-D values evaluate, fetch, save and
load."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers as L

X = np.random.default_rng(0).uniform(-1, 1, (6, 4)).astype("float32")
Y = np.random.default_rng(1).uniform(-1, 1, (6, 3)).astype("float32")
W0 = np.random.default_rng(2).uniform(-0.5, 0.5, (4, 3)).astype("float32")


def _net(loss_kind, make_opt, lr=None):
    """One fc layer and a squared error reduced to a 0-D loss (``mean`` or ``reduce_mean``),
    or to [1, 1] (reduce_mean with keep_dim) or [1] (mean reshaped)."""
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = L.data("x", shape=[-1, 4], dtype="float32")
        y = L.data("y", shape=[-1, 3], dtype="float32")
        out = L.fc(x, 3, param_attr=hr.ParamAttr(name="w"), bias_attr=hr.ParamAttr(name="b"))
        err = L.square(out - y)
        loss = {"mean": lambda: L.mean(err),
                "reduce_mean": lambda: L.reduce_mean(err),
                "keep_dim": lambda: L.reduce_mean(err, dim=[0, 1], keep_dim=True),
                "reshaped": lambda: L.reshape(L.mean(err), [1])}[loss_kind]()
        rate = lr() if lr is not None else None
        make_opt(rate).minimize(loss)
    return main, startup, loss


def _train(main, startup, loss, steps=3):
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    scope.set("w", hr.Tensor(W0.copy()))
    losses = [exe.run(main, feed={"x": X, "y": Y}, fetch_list=[loss], scope=scope)[0]
              for _ in range(steps)]
    return losses, np.asarray(scope.find("w").data), np.asarray(scope.find("b").data)


OPTIMIZERS = {
    "sgd": lambda lr: hr.optimizer.SGD(lr if lr is not None else 0.1),
    "momentum": lambda lr: hr.optimizer.Momentum(lr if lr is not None else 0.1, momentum=0.9),
    "adagrad": lambda lr: hr.optimizer.Adagrad(lr if lr is not None else 0.1),
    "adam": lambda lr: hr.optimizer.Adam(lr if lr is not None else 0.05),
    "rmsprop": lambda lr: hr.optimizer.RMSProp(lr if lr is not None else 0.05),
    "global_norm_clip": lambda lr: hr.optimizer.SGD(
        0.1, grad_clip=hr.clip.GradientClipByGlobalNorm(0.05)),
    "norm_clip": lambda lr: hr.optimizer.SGD(0.1, grad_clip=hr.clip.GradientClipByNorm(0.05)),
    "value_clip": lambda lr: hr.optimizer.SGD(0.1, grad_clip=hr.clip.GradientClipByValue(0.01)),
    "l2": lambda lr: hr.optimizer.Momentum(0.1, 0.9, regularization=hr.regularizer.L2Decay(0.1)),
    "l1": lambda lr: hr.optimizer.Adam(0.05, regularization=hr.regularizer.L1Decay(0.1)),
}
SCHEDULES = {
    "exponential_decay": lambda: L.exponential_decay(0.1, 2, 0.5),
    "piecewise_decay": lambda: L.piecewise_decay([1, 2], [0.1, 0.05, 0.01]),
    "noam_decay": lambda: L.noam_decay(16, 2),
}


@pytest.mark.parametrize("opt", sorted(OPTIMIZERS))
def test_a_0d_loss_trains_as_a_one_element_loss_of_any_rank(opt):
    results = {}
    for kind in ("mean", "reduce_mean", "keep_dim", "reshaped"):
        main, startup, loss = _net(kind, OPTIMIZERS[opt])
        want = {"mean": (), "reduce_mean": (), "keep_dim": (1, 1), "reshaped": (1,)}[kind]
        assert tuple(loss.shape) == want
        grad = main.global_block().var(loss.name + "@GRAD")
        assert tuple(grad.shape) == want        # the seed has the loss's own shape
        losses, w, b = _train(main, startup, loss)
        assert all(v.shape == want for v in losses)
        results[kind] = (np.array([float(v.reshape(())) for v in losses]), w, b)
    ref = results.pop("mean")
    assert ref[0][-1] < ref[0][0]
    for kind, got in results.items():
        for a, b in zip(ref, got):
            np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7, err_msg=f"{opt} {kind}")


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_learning_rate_schedules_with_a_0d_loss(name):
    main, startup, loss = _net("mean", OPTIMIZERS["sgd"], SCHEDULES[name])
    losses, _, _ = _train(main, startup, loss, steps=4)
    assert all(v.shape == () for v in losses) and losses[-1] < losses[0]


@pytest.mark.parametrize("opt", ["sgd", "momentum", "adagrad", "adam", "rmsprop"])
def test_a_0d_learning_rate_variable_works_like_a_number(opt):
    """Paddle 3's learning_rate_N is 0-D; as a Variable it gives the numbers a float does."""
    def lr():
        return L.create_global_var(shape=[], value=0.05, dtype="float32")
    main, startup, loss = _net("mean", OPTIMIZERS[opt], lr)
    rate = [op for op in main.global_block().ops if "LearningRate" in op.input_names]
    assert rate and all(tuple(main.global_block().var(op.input("LearningRate")[0]).shape)
                        == () for op in rate)
    got = _train(main, startup, loss)
    main, startup, loss = _net("mean", OPTIMIZERS[opt], lambda: 0.05)
    want = _train(main, startup, loss)
    for a, b in zip(want, got):
        np.testing.assert_allclose(np.asarray(b, dtype=float), np.asarray(a, dtype=float),
                                   rtol=1e-6, err_msg=opt)


def _declare_one(desc, names):
    """Rewrite a program's declarations as Fluid wrote them: ``names`` get shape [1], and so
    does the fill_constant that seeds a loss's gradient."""
    for block in desc.blocks:
        for var in block.vars:
            if var.name in names:
                del var.type.lod_tensor.tensor.dims[:]
                var.type.lod_tensor.tensor.dims.append(1)
        for op in block.ops:
            if op.type == "fill_constant" and any(a in names for o in op.outputs
                                                  for a in o.arguments):
                for attr in op.attrs:
                    if attr.name == "shape":
                        del attr.longs[:]
                        del attr.ints[:]
                        attr.ints.append(1)


@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_a_fluid_program_with_one_element_losses_still_trains(opt):
    """A Fluid program declares [1] for mean's Out and fills loss@GRAD as [1]: the kernels
    give 0-D (the same one number), the grad ops take the [1] gradient, the numbers match."""
    main, startup, loss = _net("mean", OPTIMIZERS[opt])
    want = _train(main, startup, loss)
    desc = main.desc.__class__()
    desc.CopyFrom(main.desc)
    _declare_one(desc, {loss.name, loss.name + "@GRAD"})
    old = hr.Program.parse_from_string(desc.SerializeToString())
    assert tuple(old.global_block().var(loss.name).shape) == (1,)
    got = _train(old, startup, loss.name)
    for a, b in zip(want, got):
        np.testing.assert_allclose(np.asarray(b, dtype=float), np.asarray(a, dtype=float),
                                   rtol=1e-6, err_msg=opt)


def test_0d_values_evaluate_fetch_save_and_load(tmp_path):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = L.data("x", shape=[-1, 4], dtype="float32")
        m, s = L.mean(x), L.reduce_sum(x)
        big = L.reduce_max(x, dim=[0, 1])
        kept = L.create_global_var(shape=[], value=2.5, dtype="float64", name="kept")
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    got = exe.run(main, feed={"x": X}, fetch_list=[m, s, big, kept], scope=scope)
    assert [v.shape for v in got] == [()] * 4
    np.testing.assert_allclose(got[:3], [X.mean(), X.sum(), X.max()], rtol=1e-6)
    assert float(got[3]) == 2.5 and got[3].dtype == np.float64
    with hr.scope_guard(scope):
        assert hr.eval(m, feed={"x": X}).shape == ()
    assert repr(m).endswith(": float32[]>")
    hr.io.save_persistables(exe, str(tmp_path), main, scope=scope)
    other = hr.Scope()
    hr.io.load_persistables(exe, str(tmp_path), main, scope=other)
    loaded = np.asarray(other.find("kept").data)
    assert loaded.shape == () and loaded == 2.5
    # A 0-D tensor is written with no dims (Paddle's format for it).
    raw = (tmp_path / "kept").read_bytes()
    assert raw.endswith(np.float64(2.5).tobytes()) and len(raw) == 4 + 8 + 4 + 4 + 2 + 8
