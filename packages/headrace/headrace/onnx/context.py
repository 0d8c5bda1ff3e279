"""The state one ONNX export builds up: nodes, initializers, fresh names, and the program's
view of each variable (shape, dtype) that op exporters consult.

An exporter writes the nodes of one op with ``ctx.node(...)``, naming the op's Paddle output
variables as the node outputs, so the graph is wired by the program's own variable names;
temporaries get fresh names that cannot collide with them.
"""
import numpy as np

from .. import dtypes
from ..errors import OpError

__all__ = ["ExportContext", "onnx_module"]


def onnx_module():
    """The ``onnx`` package, or a HeadraceError saying how to install it (an optional
    dependency: the ``onnx`` extra)."""
    try:
        import onnx
    except ImportError:
        from ..errors import HeadraceError
        raise HeadraceError("ONNX export needs the onnx package: pip install headrace[onnx] "
                            "(or pip install onnx)") from None
    return onnx


class ExportContext:
    """One export: ``block`` is the pruned inference program's global block, ``opset`` the
    target ONNX opset (default domain)."""

    def __init__(self, block, opset):
        self.onnx = onnx_module()
        self.block = block
        self.opset = opset
        self.nodes = []
        self.initializers = {}            # name -> numpy array
        self._taken = set()
        for b in block.program.blocks:
            self._taken.update(b.vars)
        self._consts = {}
        self.op = None                    # the op being exported (for error messages)

    # -- the program's variables -----------------------------------------------------------
    def var(self, name):
        v = self.block.find_var(name)
        if v is None:
            self.fail(f"reads variable '{name}', which the program does not declare")
        return v

    def shape(self, name):
        """The declared shape (-1 where unknown); a temporary made here has the shape its
        maker recorded with :meth:`note_shape`."""
        if name in self.initializers:
            return list(self.initializers[name].shape)
        return list(self.var(name).shape)

    def rank(self, name):
        return len(self.shape(name))

    def dtype(self, name):
        if name in self.initializers:
            return self.initializers[name].dtype.name
        return self.var(name).dtype

    def onnx_dtype(self, dtype):
        """The TensorProto element type of a headrace dtype name."""
        return self.onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtypes.to_numpy(dtype)))

    # -- building -------------------------------------------------------------------------
    def fresh(self, hint):
        base = f"{hint}.onnx"
        name, i = base, 0
        while name in self._taken:
            i += 1
            name = f"{base}{i}"
        self._taken.add(name)
        return name

    def node(self, op_type, inputs, outputs=None, n_out=1, **attrs):
        """Append an ONNX node; ``inputs`` may hold ``""`` for an omitted optional input.
        Returns its output name (its list of names when ``n_out`` > 1 or ``outputs`` is a
        list of several)."""
        if outputs is None:
            hint = self.op.type if self.op is not None else op_type.lower()
            outputs = [self.fresh(f"{hint}.{op_type.lower()}") for _ in range(n_out)]
        elif isinstance(outputs, str):
            outputs = [outputs]
        name = self.fresh(f"{self.op.type if self.op is not None else 'graph'}.{op_type}")
        self.nodes.append(self.onnx.helper.make_node(op_type, list(inputs), list(outputs),
                                                     name=name, **attrs))
        return outputs[0] if len(outputs) == 1 else list(outputs)

    def const(self, value, dtype=None, hint="const"):
        """An initializer holding ``value`` (cached per value, dtype and shape)."""
        array = np.asarray(value, dtype=dtype)
        key = (array.dtype.str, array.shape, array.tobytes())
        if key not in self._consts:
            name = self.fresh(hint)
            self.initializers[name] = array
            self._consts[key] = name
        return self._consts[key]

    def ints(self, values):
        """A 1-D int64 constant (shapes, axes, pads)."""
        return self.const(np.asarray(list(values), dtype=np.int64).reshape(-1), hint="ints")

    def scalar(self, value, like):
        """A 0-d constant of the dtype of variable ``like``."""
        return self.const(np.asarray(value, dtype=dtypes.to_numpy(self.dtype(like))),
                          hint="scalar")

    # Axes are inputs of Squeeze, Unsqueeze and ReduceSum (export's MIN_OPSET is 13).
    def unsqueeze(self, x, axes, out=None):
        if not axes:
            return self.node("Identity", [x], out)
        return self.node("Unsqueeze", [x, self.ints(axes)], out)

    def squeeze(self, x, axes, out=None):
        """Squeeze ``axes`` (None: every dim of size 1)."""
        if axes is not None and not axes:
            return self.node("Identity", [x], out)
        return self.node("Squeeze", [x] + ([self.ints(axes)] if axes else []), out)

    def reduce(self, onnx_op, x, axes, keepdims, out=None):
        """``Reduce*`` over ``axes`` (None: every axis) across opsets: ReduceSum takes its axes
        as an input from opset 13, the other reductions from opset 18."""
        as_input = self.opset >= (13 if onnx_op == "ReduceSum" else 18)
        if axes is None:
            return self.node(onnx_op, [x], out, keepdims=int(keepdims))
        if as_input:
            return self.node(onnx_op, [x, self.ints(axes)], out, keepdims=int(keepdims))
        return self.node(onnx_op, [x], out, axes=list(axes), keepdims=int(keepdims))

    def cast(self, x, dtype, out=None):
        return self.node("Cast", [x], out, to=self.onnx_dtype(dtype))

    # -- errors ---------------------------------------------------------------------------
    def fail(self, reason, expected=None, found=None):
        """Raise an OpError about the op being exported (its type, index and source line)."""
        op = self.op
        raise OpError(f"cannot be exported to ONNX: {reason}",
                      op_type=op.type if op is not None else None,
                      block_idx=op.block.idx if op is not None else None,
                      op_idx=op.idx if op is not None else None,
                      source=op.source if op is not None else None,
                      expected=expected, found=found)

