"""Recurrent networks: ``StaticRNN`` (fixed-length, time-major batches) and ``DynamicRNN``
(batches of variable-length sequences, no padding), as Paddle Fluid writes them.

Both lower to a ``while`` loop over tensor arrays, so they train through ``while_grad``:

- a step input is an array of time steps built before the loop (``unstack`` for StaticRNN;
  ``lod_tensor_to_array`` over a ``lod_rank_table`` for DynamicRNN, which orders the
  sequences longest first, so that at step t the first rows are exactly the sequences still
  running) and read per step with ``read_from_array``;
- a memory is an array too: the initial state at position 0, the state after step t at t + 1
  (DynamicRNN shrinks it to the sequences still running with ``shrink_rnn_memory``);
- outputs are written per step to an array, stacked (``tensor_array_to_tensor``) or turned
  back into sequences in their original order (``array_to_lod_tensor``) after the loop.

The loop counter is read before it is incremented (a step's gradient sees the values from
before the step), so every array position a step touches is ``i`` or a copy ``i + 1``.
"""
from ..framework import Variable
from ..layer_helper import LayerHelper
from .control_flow import (While, array_read, array_write, create_array, increment,
                           less_than)
from .lod_array import (array_to_lod_tensor, lod_rank_table, lod_tensor_to_array,
                        max_sequence_len, reorder_lod_tensor_by_rank, shrink_memory,
                        tensor_array_to_tensor)
from .nn import fc
from .tensor import concat, fill_constant, fill_constant_batch_size_like, unstack

__all__ = ["StaticRNN", "DynamicRNN", "lstm_unit", "gru_unit"]


class _InBlock:
    """``with _InBlock(block):`` appends layers to ``block`` (an enclosing block of the step)."""

    def __init__(self, block):
        self.block = block

    def __enter__(self):
        program = self.block.program
        self.saved = program.current_block_idx
        program.current_block_idx = self.block.idx
        return self.block

    def __exit__(self, *exc):
        self.block.program.current_block_idx = self.saved
        return False


class _StepGuard:
    """``with rnn.step():`` / ``with drnn.block():``: the step block while inside."""

    def __init__(self, rnn):
        self.rnn = rnn

    def __enter__(self):
        self.rnn._start()
        return self.rnn.body

    def __exit__(self, exc_type, exc, tb):
        self.rnn._finish(exc_type, exc, tb)
        return False


class _Memory:
    __slots__ = ("array", "value", "new")

    def __init__(self, array, value):
        self.array, self.value, self.new = array, value, None


class _RNNBase:
    """What both RNNs share: the step block, the counter, memories and outputs as arrays."""

    kind = "RNN"

    def __init__(self, name):
        self.helper = LayerHelper(self.kind.lower(), name=name)
        self.program = self.helper.main_program
        self.parent = None     # the block the loop is appended to
        self.body = None
        self.status = "before"  # "before" -> "in" -> "after"
        self.memories = {}     # id(step variable) -> _Memory
        self.outputs = []      # (array, dtype)
        self.counter = None

    def _expect(self, status, what):
        if self.status != status:
            where = {"before": f"before the {self.kind}'s step block",
                     "in": f"inside the {self.kind}'s step block",
                     "after": f"after the {self.kind}'s step block"}[status]
            raise self.helper.error(f"{what} is used {where}")

    def _start(self):
        self._expect("before", "the step block")
        self.status = "in"
        self.parent = self.program.current_block()
        with _InBlock(self.parent):
            self.counter = fill_constant([1], "int64", 0)
            self.zero = fill_constant([1], "int64", 0)
        self.loop_cond = self.parent.create_var(
            name=self.program._unique_var_name(f"{self.helper.name}.cond"), shape=[1],
            dtype="bool")
        self.loop = While(self.loop_cond)
        self.guard = self.loop.block()
        self.body = self.guard.__enter__()

    def _finish(self, exc_type, exc, tb):
        try:
            if exc_type is None:
                self._end_step()
        finally:
            self.guard.__exit__(exc_type, exc, tb)
            self.status = "after"

    def _end_step(self):
        for mem in self.memories.values():
            if mem.new is None:
                raise self.helper.error(f"memory {mem.value.name} is never updated: call "
                                        f"update_memory(mem, new_value) in the step")
        # Written after the step's ops, at i + 1 (a copy, so the counter is read before it
        # is incremented), then the counter moves on.
        nxt = increment(self.counter, 1.0, in_place=False)
        for mem in self.memories.values():
            array_write(mem.new, nxt, array=mem.array)
        increment(self.counter, in_place=True)
        less_than(self.counter, self._length(), cond=self.loop_cond)

    def _memory_from(self, init):
        """A memory whose state before the first step is ``init`` (a parent variable)."""
        with _InBlock(self.parent):
            arr = create_array(init.dtype)
            array_write(init, self.zero, array=arr)
        value = array_read(arr, self.counter)
        mem = _Memory(arr, value)
        self.memories[id(value)] = mem
        return mem

    def _outside(self, x, what):
        """``x`` must be visible from the block the loop is appended to: it feeds the loop."""
        if self.parent._find_var_recursive(x.name) is not x:
            raise self.helper.error(f"{what}: {x.name} is computed inside the step block; "
                                    f"compute it before the step block (with ... :) starts")

    def update_memory(self, mem, var):
        """The memory ``mem`` holds ``var`` in the next step."""
        self._expect("in", "update_memory()")
        entry = self.memories.get(id(mem))
        if entry is None:
            raise self.helper.error(f"update_memory: {getattr(mem, 'name', mem)!r} is not a "
                                    f"memory of this {self.kind} (use the value memory() "
                                    f"returned)")
        if not isinstance(var, Variable):
            raise self.helper.error(f"update_memory: the new value must be a Variable, got "
                                    f"{var!r}"[:300])
        entry.new = var

    def _output_arrays(self, outputs):
        self._expect("in", "output()")
        for o in outputs:
            if not isinstance(o, Variable):
                raise self.helper.error(f"output: expected Variables, got {o!r}"[:300])
            with _InBlock(self.parent):  # read after the loop: declared outside it
                arr = create_array(o.dtype)
            array_write(o, self.counter, array=arr)
            self.outputs.append(arr)


class StaticRNN(_RNNBase):
    """Fluid's ``StaticRNN`` over time-major inputs ``[T, batch, ...]`` (T known when the
    network is built)::

        rnn = layers.StaticRNN()
        with rnn.step():
            x_t = rnn.step_input(x)                       # [batch, ...]
            prev = rnn.memory(shape=[-1, hidden], batch_ref=x_t)
            h = layers.tanh(layers.elementwise_add(layers.matmul(x_t, w), layers.matmul(prev, u)))
            rnn.update_memory(prev, h)
            rnn.step_output(h)
        out = rnn()                                        # [T, batch, hidden]
    """

    kind = "StaticRNN"

    def __init__(self, name=None):
        super().__init__(name)
        self.seq_len = None
        self.step_inputs = {}  # id(step variable) -> the parent input
        self.n_steps = None    # the int64 constant T, made once

    def step(self):
        """``with rnn.step():`` builds the step block."""
        return _StepGuard(self)

    def _length(self):
        if self.n_steps is None:
            with _InBlock(self.parent):
                self.n_steps = fill_constant([1], "int64", self.seq_len)
        return self.n_steps

    def _end_step(self):
        if self.seq_len is None:
            raise self.helper.error("the step block has no step_input(): the number of steps "
                                    "is the first dimension of the step inputs")
        n = self._length()
        # The loop condition before the first step: 0 < T.
        with _InBlock(self.parent):
            less_than(self.counter, n, cond=self.loop_cond)
        super()._end_step()

    def step_input(self, x):
        """Time step t of ``x`` (``[T, batch, ...]``) at step t: a ``[batch, ...]`` Variable."""
        self._expect("in", "step_input()")
        if not isinstance(x, Variable) or len(x.shape) < 2:
            raise self.helper.error(f"step_input: x must be a Variable of shape [T, batch, "
                                    f"...], got {x!r}"[:300])
        self._outside(x, "step_input")
        t = x.shape[0]
        if t is None or t < 0:
            raise self.helper.error(f"step_input: the number of steps, x.shape[0], must be "
                                    f"known when the network is built (found {list(x.shape)}); "
                                    f"DynamicRNN runs sequences of any length")
        if self.seq_len is None:
            self.seq_len = t
        elif t != self.seq_len:
            raise self.helper.error(f"step_input: every step input has the same number of "
                                    f"steps, {self.seq_len}; {x.name} has {t}")
        with _InBlock(self.parent):
            arr = create_array(x.dtype)
            for k, piece in enumerate(unstack(x, 0, t)):  # views of x, one op
                array_write(piece, fill_constant([1], "int64", k), array=arr)
        value = array_read(arr, self.counter)
        self.step_inputs[id(value)] = x
        return value

    def memory(self, init=None, shape=None, batch_ref=None, init_value=0.0,
               init_batch_dim_idx=0, ref_batch_dim_idx=1):
        """The state carried from step to step: ``init`` before the first step, or
        ``init_value`` in ``shape`` with the batch dimension of ``batch_ref`` (a step input
        or a Variable of the enclosing block)."""
        self._expect("in", "memory()")
        if init is None:
            if shape is None or batch_ref is None:
                raise self.helper.error("memory: give init, or shape and batch_ref")
            ref = self.step_inputs.get(id(batch_ref))
            if ref is None:
                ref, ref_batch_dim_idx = batch_ref, 0
                if ref.block.idx == self.body.idx:
                    raise self.helper.error("memory: batch_ref must be a step input or a "
                                            "Variable of the enclosing block")
            with _InBlock(self.parent):
                init = fill_constant_batch_size_like(ref, shape, ref.dtype, init_value,
                                             ref_batch_dim_idx, init_batch_dim_idx)
        elif not isinstance(init, Variable):
            raise self.helper.error(f"memory: init must be a Variable, got {init!r}"[:300])
        return self._memory_from(init).value

    def step_output(self, o):
        """Record ``o`` at each step; ``rnn()`` stacks them into ``[T, ...]``."""
        self._output_arrays([o])

    def output(self, *outputs):
        """Record several step outputs."""
        self._output_arrays(outputs)

    def __call__(self):
        """The step outputs stacked over time, ``[T, batch, ...]`` (one Variable or a list)."""
        self._expect("after", "rnn()")
        if not self.outputs:
            raise self.helper.error("the step block has no step_output()")
        outs = [tensor_array_to_tensor(arr, axis=0, use_stack=True)[0] for arr in self.outputs]
        return outs[0] if len(outs) == 1 else outs


class DynamicRNN(_RNNBase):
    """Fluid's ``DynamicRNN`` over a batch of variable-length sequences (a LoD tensor), with no
    padding: at step t only the sequences longer than t run::

        drnn = layers.DynamicRNN()
        with drnn.block():
            word = drnn.step_input(emb)                   # [running sequences, ...]
            prev = drnn.memory(shape=[hidden], value=0.0)
            h = layers.tanh(layers.elementwise_add(layers.matmul(word, w),
                                                   layers.matmul(prev, u)))
            drnn.update_memory(prev, h)
            drnn.output(h)
        out = drnn()                                      # sequences like emb's, LoD kept

    Empty sequences are allowed; they produce empty output sequences.
    """

    kind = "DynamicRNN"

    def __init__(self, name=None):
        super().__init__(name)
        self.table = None
        self.max_len = None
        self.first_input = None  # (array, dtype) of the first step input

    def block(self):
        """``with drnn.block():`` builds the step block."""
        return _StepGuard(self)

    def _length(self):
        return self.max_len

    def _end_step(self):
        if self.table is None:
            raise self.helper.error("the step block has no step_input()")
        super()._end_step()

    def step_input(self, x, level=0):
        """The items at step t of the sequences of ``x`` still running, longest first."""
        self._expect("in", "step_input()")
        if not isinstance(x, Variable) or x.lod_level < 1:
            raise self.helper.error(f"step_input: x must be a Variable with LoD (lod_level "
                                    f">= 1), got {x!r}"[:300])
        self._outside(x, "step_input")
        with _InBlock(self.parent):
            if self.table is None:
                self.table = lod_rank_table(x, level)
                self.max_len = max_sequence_len(self.table)
                less_than(self.counter, self.max_len, cond=self.loop_cond)
            arr = lod_tensor_to_array(x, self.table)
        if self.first_input is None:
            self.first_input = arr
        return array_read(arr, self.counter)

    def static_input(self, x):
        """``x`` (one entry per sequence) reordered like the sequences and cut, at each step,
        to the sequences still running."""
        self._expect("in", "static_input()")
        if self.table is None:
            raise self.helper.error("static_input() needs a step_input() before it")
        self._outside(x, "static_input")
        with _InBlock(self.parent):
            ordered = reorder_lod_tensor_by_rank(x, self.table)
        return shrink_memory(ordered, self.counter, self.table)

    def memory(self, init=None, shape=None, value=0.0, need_reorder=False, dtype="float32"):
        """The state carried from step to step: ``init`` (one row per sequence; reordered
        like the sequences when ``need_reorder``), or ``value`` in ``[rows, *shape]``."""
        self._expect("in", "memory()")
        if self.table is None:
            raise self.helper.error("memory() needs a step_input() before it")
        if init is None:
            if shape is None:
                raise self.helper.error("memory: give init, or shape")
            with _InBlock(self.parent):
                # One row per sequence of the first step (every non-empty sequence).
                first = array_read(self.first_input, self.zero)
                init = fill_constant_batch_size_like(first, [-1] + list(shape), dtype, value)
        elif not isinstance(init, Variable):
            raise self.helper.error(f"memory: init must be a Variable, got {init!r}"[:300])
        elif need_reorder:
            with _InBlock(self.parent):
                init = reorder_lod_tensor_by_rank(init, self.table)
        mem = self._memory_from(init)
        shrunk = shrink_memory(mem.value, self.counter, self.table)
        self.memories[id(shrunk)] = self.memories.pop(id(mem.value))
        return shrunk

    def output(self, *outputs):
        """Record step outputs; ``drnn()`` turns them back into sequences."""
        self._output_arrays(outputs)

    def __call__(self):
        """The outputs as sequences in the input's order (one Variable or a list)."""
        self._expect("after", "drnn()")
        if not self.outputs:
            raise self.helper.error("the step block has no output()")
        outs = [array_to_lod_tensor(arr, self.table) for arr in self.outputs]
        return outs[0] if len(outs) == 1 else outs


def lstm_unit(x_t, hidden_t_prev, cell_t_prev, forget_bias=0.0, param_attr=None,
              bias_attr=None, name=None):
    """Fluid's lstm_unit: one LSTM step (for a StaticRNN's step block). The gates come from one
    fc over [x_t, hidden_t_prev] (layout [input, forget, output, candidate]); returns
    ``(hidden, cell)``."""
    helper = LayerHelper("lstm_unit", name=name)
    for arg, v in (("x_t", x_t), ("hidden_t_prev", hidden_t_prev),
                   ("cell_t_prev", cell_t_prev)):
        if not isinstance(v, Variable):
            raise helper.error(f"argument '{arg}' must be a Variable, got {v!r}"[:300])
    d = cell_t_prev.shape[-1]
    if d is None or d < 0:
        raise helper.error(f"cell_t_prev's size must be known, found {list(cell_t_prev.shape)}")
    gates = fc(concat([x_t, hidden_t_prev], axis=1), size=4 * d, param_attr=param_attr,
               bias_attr=bias_attr)
    c = helper.create_variable_for_type_inference(x_t.dtype)
    h = helper.create_variable_for_type_inference(x_t.dtype)
    helper.append_op("lstm_unit", {"X": gates, "C_prev": cell_t_prev}, {"C": c, "H": h},
                     {"forget_bias": float(forget_bias)})
    return h, c


GRU_ACTIVATIONS = {"identity": 0, "sigmoid": 1, "tanh": 2, "relu": 3}


def gru_unit(input, hidden, size, param_attr=None, bias_attr=None, activation="tanh",
             gate_activation="sigmoid", origin_mode=False):
    """Fluid's gru_unit: one GRU step; ``input`` holds the step's input projections (``size``
    = 3 * hidden columns). Returns ``(hidden, reset_hidden_prev, gate)``."""
    helper = LayerHelper("gru_unit", param_attr=param_attr, bias_attr=bias_attr)
    for arg, v in (("input", input), ("hidden", hidden)):
        if not isinstance(v, Variable):
            raise helper.error(f"argument '{arg}' must be a Variable, got {v!r}"[:300])
    if not isinstance(size, int) or size % 3:
        raise helper.error(f"argument 'size' must be 3 * hidden, got {size!r}")
    for arg, v in (("activation", activation), ("gate_activation", gate_activation)):
        if v not in GRU_ACTIVATIONS:
            raise helper.error(f"argument '{arg}' must be one of {sorted(GRU_ACTIVATIONS)}, "
                               f"got {v!r}")
    d, dtype = size // 3, input.dtype
    inputs = {"Input": input, "HiddenPrev": hidden,
              "Weight": helper.create_parameter(helper.param_attr, [d, 3 * d], dtype)}
    bias = helper.create_parameter(helper.bias_attr, [1, 3 * d], dtype, is_bias=True)
    if bias is not None:
        inputs["Bias"] = bias
    outs = {k: helper.create_variable_for_type_inference(dtype)
            for k in ("Gate", "ResetHiddenPrev", "Hidden")}
    helper.append_op("gru_unit", inputs, outs,
                     {"activation": GRU_ACTIVATIONS[activation],
                      "gate_activation": GRU_ACTIVATIONS[gate_activation],
                      "origin_mode": bool(origin_mode)})
    return outs["Hidden"], outs["ResetHiddenPrev"], outs["Gate"]
