"""gru ("dynamic_gru"): outputs and gradients against Fluid's equations written out in PyTorch
(float64, autograd), both origin modes, reversed, with and without H0 and bias; finite
differences through the Executor; LoD edge cases; errors."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.runtime.tensor import create_lod_tensor
from headrace.testing import program_gradients

torch = pytest.importorskip("torch")
D, I = 3, 4


def _program(reverse=False, origin=False, with_h0=True, bias=True):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[I], dtype="float64", lod_level=1)
        proj = layers.fc(x, size=3 * D, bias_attr=False, param_attr=hr.ParamAttr(name="Wx"))
        h0 = layers.data("h0", shape=[D], dtype="float64") if with_h0 else None
        hidden = layers.dynamic_gru(proj, D, param_attr=hr.ParamAttr(name="Wh"),
                                    bias_attr=hr.ParamAttr(name="B") if bias else False,
                                    is_reverse=reverse, h_0=h0, origin_mode=origin)
        loss = layers.mean(layers.elementwise_mul(hidden, hidden))
        hr.append_backward(loss)
    return main, startup, hidden, loss


def _values(rng):
    return {"Wx": rng.standard_normal((I, 3 * D)) * 0.5,
            "Wh": rng.standard_normal((D, 3 * D)) * 0.5,
            "B": rng.standard_normal((1, 3 * D)) * 0.3}


def _torch_gru(x, lens, h0, values, reverse, origin, bias):
    """Fluid's GRU in PyTorch: gates [u, r, c]; Weight's memory is W_ur [D, 2D] then W_c
    [D, D]; the reset gate multiplies h before W_c."""
    wx = torch.from_numpy(values["Wx"]).requires_grad_()
    flat = torch.from_numpy(values["Wh"].reshape(-1).copy()).requires_grad_()
    b = torch.from_numpy(values["B"][0].copy()).requires_grad_() if bias else None
    w_ur, w_c = flat[:2 * D * D].reshape(D, 2 * D), flat[2 * D * D:].reshape(D, D)
    xs = torch.from_numpy(x) @ wx
    out = [None] * len(x)
    offsets = np.cumsum([0] + lens)
    for s, n in enumerate(lens):
        h = torch.from_numpy(h0[s]) if h0 is not None else torch.zeros(D, dtype=torch.float64)
        for k in (range(n - 1, -1, -1) if reverse else range(n)):
            z = xs[offsets[s] + k] + (b if b is not None else 0)
            u = torch.sigmoid(z[:D] + h @ w_ur[:, :D])
            r = torch.sigmoid(z[D:2 * D] + h @ w_ur[:, D:])
            c = torch.tanh(z[2 * D:] + (r * h) @ w_c)
            h = u * h + (1 - u) * c if origin else (1 - u) * h + u * c
            out[offsets[s] + k] = h
    hidden = torch.stack(out)
    (hidden ** 2).mean().backward()
    grads = {"Wx": wx.grad.numpy(), "Wh": flat.grad.numpy().reshape(D, 3 * D)}
    if bias:
        grads["B"] = b.grad.numpy().reshape(1, -1)
    return hidden.detach().numpy(), grads


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("origin", [False, True])
@pytest.mark.parametrize("with_h0, bias", [(True, True), (False, False)])
def test_matches_fluids_equations_in_torch(reverse, origin, with_h0, bias):
    rng = np.random.default_rng(5)
    lens = [3, 0, 4, 1]
    x = rng.standard_normal((sum(lens), I))
    h0 = rng.standard_normal((len(lens), D)) if with_h0 else None
    values = _values(rng)
    main, startup, hidden, loss = _program(reverse, origin, with_h0, bias)
    feed = {"x": create_lod_tensor(x, [lens])}
    if with_h0:
        feed["h0"] = h0
    names = ["Wx", "Wh"] + (["B"] if bias else [])
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    for n in names:
        scope.set(n, hr.Tensor(values[n].copy()))
    got = exe.run(main, feed=feed, fetch_list=[hidden] + [n + "@GRAD" for n in names],
                  scope=scope)
    ref, grads = _torch_gru(x, lens, h0, values, reverse, origin, bias)
    np.testing.assert_allclose(got[0], ref, atol=1e-12)
    for n, g in zip(names, got[1:]):
        np.testing.assert_allclose(g, grads[n], rtol=1e-5, atol=1e-10, err_msg=n)


def test_gradients_equal_finite_differences():
    rng = np.random.default_rng(6)
    lens = [2, 3, 0]
    main, startup, _, loss = _program(reverse=True, origin=False)
    feed = {"x": create_lod_tensor(rng.standard_normal((5, I)), [lens]),
            "h0": rng.standard_normal((3, D))}
    analytic, numeric = program_gradients(main, startup, loss, ["Wx", "Wh", "B"], feed,
                                          values=_values(rng))
    for n in analytic:
        np.testing.assert_allclose(analytic[n], numeric[n], rtol=1e-6, atol=1e-8, err_msg=n)


def test_one_sequence_and_errors():
    main, startup, hidden, _ = _program(with_h0=False)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    (h,) = exe.run(main, feed={"x": create_lod_tensor(np.ones((4, I)), [[4]])},
                   fetch_list=[hidden], scope=scope)
    assert h.shape == (4, D)
    with pytest.raises(hr.HeadraceError, match="gru: Input must be a batch of sequences"):
        exe.run(main, feed={"x": np.ones((4, I))}, fetch_list=[hidden], scope=scope)
    with hr.program_guard(hr.Program(), hr.Program()):
        x = layers.data("x", shape=[7], dtype="float64", lod_level=1)
        with pytest.raises(hr.HeadraceError, match="must have 3 \\* size = 6 columns"):
            layers.dynamic_gru(x, 2)


@pytest.mark.parametrize("dtype, tol, packed", [("float32", 2e-5, True),
                                              ("float32", 2e-5, False),
                                              ("float64", 1e-10, True)])
@pytest.mark.parametrize("lens, reverse, origin, with_h0", [([5, 5, 5, 5], False, False, False),
                                                            ([5, 5, 5, 5], True, True, True),
                                                            ([0, 4, 2, 0, 4], True, False, True),
                                                            ([0, 3, 1], False, True, False)])
def test_kernels_match_the_reference_on_equal_and_ragged_batches(request, dtype, tol, packed, lens,
                                                                 reverse, origin, with_h0):
    # The kernels' own GEMM (float32) and the weight gradient as two GEMMs over all steps:
    # equal lengths, leading and repeated empty sequences, both directions and origin modes.
    from headrace_nn.kernels.cpu import gru as kernels
    from headrace_nn.kernels.cpu.gru import GRU, GRUGrad
    from headrace_nn.reference.gru import gru as ref, gru_grad as ref_grad
    was = kernels.use_packed_gemm()
    kernels.use_packed_gemm(packed)   # False: the BLAS path, as without AVX-512
    request.addfinalizer(lambda: kernels.use_packed_gemm(was))
    rng = np.random.default_rng(12)
    d, rows = 8, sum(lens)
    lod = [list(np.cumsum([0] + lens))]
    attrs = {"is_reverse": reverse, "origin_mode": origin, "gate_activation": "sigmoid",
             "activation": "tanh"}
    ins = {"Input": hr.Tensor(rng.standard_normal((rows, 3 * d)).astype(dtype), lod),
           "H0": rng.standard_normal((len(lens), d)).astype(dtype) if with_h0 else None,
           "Weight": (rng.standard_normal((d, 3 * d)) * 0.3).astype(dtype),
           "Bias": (rng.standard_normal((1, 3 * d)) * 0.3).astype(dtype)}
    args = [ins[k] for k in ("Input", "H0", "Weight", "Bias")]
    got = GRU(attrs)(*args)
    want = ref(ins, attrs)
    names = ("BatchGate", "BatchResetHiddenPrev", "BatchHidden", "Hidden")
    for g, k in zip(got, names):
        np.testing.assert_allclose(np.asarray(getattr(g, "data", g)),
                                   np.asarray(getattr(want[k], "data", want[k])), rtol=tol,
                                   atol=tol, err_msg=k)
    dh = hr.Tensor(rng.standard_normal((rows, d)).astype(dtype), lod)
    grads = GRUGrad(attrs)(*args, *got[:3], got[3], dh)
    want = ref_grad(dict(ins, **dict(zip(names, got)), **{"Hidden@GRAD": dh}), attrs)
    for g, k in zip(grads, ("Input", "H0", "Weight", "Bias")):
        if k == "H0" and not with_h0:
            assert g is None
            continue
        w = want[k + "@GRAD"]
        np.testing.assert_allclose(np.asarray(getattr(g, "data", g)),
                                   np.asarray(getattr(w, "data", w)), rtol=tol * 10,
                                   atol=tol * 10, err_msg=k)


def test_packed_gemm_agrees_with_blas_on_random_shapes(request):
    # The AVX-512 GEMM's tiles and masked panel edges against BLAS on batches of 1-39
    # sequences (empty ones too) and hidden sizes 1-69, float32.
    from headrace_nn.kernels.cpu import gru as kernels
    was = kernels.use_packed_gemm()
    request.addfinalizer(lambda: kernels.use_packed_gemm(was))
    rng = np.random.default_rng(6)
    for _ in range(12):
        n_seq, d = int(rng.integers(1, 40)), int(rng.integers(1, 70))
        lens = rng.integers(0, 9, n_seq).tolist()
        lod, rows = [list(np.cumsum([0] + lens))], sum(lens)
        state = bool(rng.integers(2))
        attrs = {"is_reverse": bool(rng.integers(2)), "origin_mode": bool(rng.integers(2)),
                 "gate_activation": "sigmoid", "activation": "tanh"}
        f32 = np.float32
        args = [hr.Tensor(rng.standard_normal((rows, 3 * d)).astype(f32), lod),
                rng.standard_normal((n_seq, d)).astype(f32) if state else None,
                (rng.standard_normal((d, 3 * d)) * 0.3).astype(f32),
                (rng.standard_normal((1, 3 * d)) * 0.3).astype(f32) if state else None]
        dh = hr.Tensor(rng.standard_normal((rows, d)).astype(f32), lod)
        results = []
        for packed in (True, False):
            kernels.use_packed_gemm(packed)
            out = kernels.GRU(attrs)(*args)
            grads = kernels.GRUGrad(attrs)(*args, *out, dh)
            results.append([np.asarray(getattr(v, "data", v)) for v in (*out, *grads)
                            if v is not None])
        for a, b in zip(*results):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4 * (np.abs(b).max() + 1))
