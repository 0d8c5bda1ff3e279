"""lstm_unit: one LSTM step from the gates' pre-activations X (layout [input, forget, output,
candidate], Paddle's for this op) and the previous cell."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import grad_of

from ._common import describe

FLOATS = ("float32", "float64")


def _infer_lstm_unit(ctx):
    x, c = ctx.input("X"), ctx.input("C_prev")
    d = c.shape[1] if c.rank == 2 else -1
    if x.rank != 2 or c.rank != 2 or (x.shape[1] >= 0 and d >= 0 and x.shape[1] != 4 * d):
        ctx.fail(f"{describe('X', x)} must be [N, 4 * D] for {describe('C_prev', c)} [N, D]",
                 expected="X [N, 4D], C_prev [N, D]",
                 found=f"X {list(x.shape)}, C_prev {list(c.shape)}")
    ctx.set_output_like("C", c)
    ctx.set_output_like("H", c)


lstm_unit = OpDef(
    "lstm_unit",
    inputs=[In("X", "[N, 4D] the gates' pre-activations [i, f, o, g]", dtypes=FLOATS),
            In("C_prev", "[N, D] the previous cell", dtypes=FLOATS)],
    outputs=[Out("C", "[N, D] the new cell"), Out("H", "[N, D] the new hidden state")],
    attrs=[Attr("forget_bias", "float", 0.0, "added to the forget gate's pre-activation")],
    infer=_infer_lstm_unit,
    doc="i, f, o = sigmoid(X_i), sigmoid(X_f + forget_bias), sigmoid(X_o); g = tanh(X_g); "
        "C = f * C_prev + i * g; H = o * tanh(C).",
)

# lstm_unit_grad(X, C_prev, C, C@GRAD, H@GRAD) -> X@GRAD, C_prev@GRAD
lstm_unit_grad = grad_of(lstm_unit, uses=["X", "C_prev", "C"], grads=["X", "C_prev"],
                         doc="Gradient of lstm_unit.")

OPS = [lstm_unit, lstm_unit_grad]
