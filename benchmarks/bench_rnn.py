"""A language-model training step through a recurrent network, beside a PyTorch eager loop
of the same cell, same sizes, same run, threads pinned.

Vocabulary 64, embedding 32, hidden 128, batch 16, 32 steps; the cell is
``h = tanh(W [x_t, h_prev] + b)``, then a softmax over the vocabulary at every step, mean
cross-entropy, SGD. Headrace runs it as a StaticRNN (time-major, every sequence 32 long) and
as a DynamicRNN (16 sequences of LoD, lengths 32, without padding); PyTorch as a Python loop
over the steps (``torch.nn.Linear`` on the concatenation, autograd, ``optim.SGD``).

    HEADRACE_BENCH_THREADS=1 python benchmarks/bench_rnn.py [static|dynamic ...]
"""
import _bench  # noqa: F401  (pins threads before NumPy loads)

import sys

import numpy as np

import headrace as hr
from headrace import layers
from headrace.runtime.tensor import create_lod_tensor

V, E, H, B, T = 64, 32, 128, 16, 32


def _head(hidden, labels, flatten):
    logits = layers.fc(hidden, size=V, num_flatten_dims=flatten)
    logits = layers.reshape(logits, [-1, V])
    loss = layers.mean(layers.softmax_with_cross_entropy(logits, layers.reshape(labels,
                                                                                [-1, 1])))
    hr.optimizer.SGD(learning_rate=0.1).minimize(loss)
    return loss


def headrace_static(ids, nxt):
    main, startup = hr.Program(), hr.Program()
    startup.random_seed = 1
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[T, B, 1], dtype="int64", append_batch_size=False)
        y = layers.data("y", shape=[T, B, 1], dtype="int64", append_batch_size=False)
        emb = layers.embedding(x, size=[V, E])
        rnn = layers.StaticRNN()
        with rnn.step():
            x_t = rnn.step_input(emb)
            prev = rnn.memory(shape=[-1, H], batch_ref=x_t)
            h = layers.fc(layers.concat([x_t, prev], axis=1), size=H, act="tanh")
            rnn.update_memory(prev, h)
            rnn.step_output(h)
        loss = _head(rnn(), y, 2)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": ids.T[:, :, None].copy(), "y": nxt.T[:, :, None].copy()}
    return lambda: exe.run(main, feed=feed, fetch_list=[loss], scope=scope)


def headrace_dynamic(ids, nxt):
    main, startup = hr.Program(), hr.Program()
    startup.random_seed = 1
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[1], dtype="int64", lod_level=1)
        y = layers.data("y", shape=[1], dtype="int64", lod_level=1)
        emb = layers.embedding(x, size=[V, E])
        drnn = layers.DynamicRNN()
        with drnn.block():
            x_t = drnn.step_input(emb)
            prev = drnn.memory(shape=[H], value=0.0)
            h = layers.fc(layers.concat([x_t, prev], axis=1), size=H, act="tanh")
            drnn.update_memory(prev, h)
            drnn.output(h)
        loss = _head(drnn(), y, 1)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    lens = [[T] * B]
    feed = {"x": create_lod_tensor(ids.reshape(-1, 1), lens),
            "y": create_lod_tensor(nxt.reshape(-1, 1), lens)}
    return lambda: exe.run(main, feed=feed, fetch_list=[loss], scope=scope)


def torch_step(torch, ids, nxt):
    torch.manual_seed(1)
    emb = torch.nn.Embedding(V, E)
    cell = torch.nn.Linear(E + H, H)
    head = torch.nn.Linear(H, V)
    params = list(emb.parameters()) + list(cell.parameters()) + list(head.parameters())
    opt = torch.optim.SGD(params, lr=0.1)
    x, y = torch.from_numpy(ids), torch.from_numpy(nxt)

    def step():
        opt.zero_grad()
        e = emb(x)                      # [B, T, E]
        h = torch.zeros(B, H)
        outs = []
        for t in range(T):
            h = torch.tanh(cell(torch.cat([e[:, t], h], dim=1)))
            outs.append(h)
        logits = head(torch.stack(outs, dim=1)).reshape(-1, V)
        loss = torch.nn.functional.cross_entropy(logits, y.reshape(-1))
        loss.backward()
        opt.step()
        return loss
    return step


def main(which):
    rng = np.random.default_rng(0)
    ids = rng.integers(0, V, (B, T)).astype(np.int64)
    nxt = rng.integers(0, V, (B, T)).astype(np.int64)
    torch = _bench.torch_or_none()
    peer = _bench.best_time(torch_step(torch, ids, nxt), repeat=7, number=3) \
        if torch is not None else None
    makers = {"static": headrace_static, "dynamic": headrace_dynamic}
    for name in which:
        ours = _bench.best_time(makers[name](ids, nxt), repeat=7, number=3)
        _bench.report(f"rnn_lm_{name}", sizes=dict(vocab=V, embed=E, hidden=H, batch=B,
                                                   steps=T),
                      headrace_ms=round(ours * 1e3, 3),
                      torch_eager_ms=round(peer * 1e3, 3) if peer else None,
                      ratio=round(ours / peer, 3) if peer else None)


if __name__ == "__main__":
    main(sys.argv[1:] or ["static", "dynamic"])
