"""Activations (headrace_math's activation family): ONNX's own op where its formula is
Paddle's, otherwise the formula spelled out in ONNX nodes."""
import math

from ._common import arg_in, arg_out, unary

__all__ = ["EXPORTERS"]


def _io(op):
    return arg_in(op, "X"), arg_out(op, "Out")


def _leaky_relu(ctx, op):
    x, out = _io(op)
    ctx.node("LeakyRelu", [x], out, alpha=float(op.attr("alpha")))


def _elu(ctx, op):
    x, out = _io(op)
    ctx.node("Elu", [x], out, alpha=float(op.attr("alpha")))


def _relu6(ctx, op):
    x, out = _io(op)
    ctx.node("Clip", [x, ctx.scalar(0.0, x), ctx.scalar(op.attr("threshold"), x)], out)


def _hard_sigmoid(ctx, op):
    x, out = _io(op)
    ctx.node("HardSigmoid", [x], out, alpha=float(op.attr("slope")),
             beta=float(op.attr("offset")))


def _softplus(ctx, op):
    # Paddle: X where beta * X > threshold, else log(1 + exp(beta * X)) / beta.
    x, out = _io(op)
    beta, threshold = op.attr("beta"), op.attr("threshold")
    bx = ctx.node("Mul", [x, ctx.scalar(beta, x)])
    soft = ctx.node("Div", [ctx.node("Softplus", [bx]), ctx.scalar(beta, x)])
    linear = ctx.node("Greater", [bx, ctx.scalar(threshold, x)])
    ctx.node("Where", [linear, x, soft], out)


def _swish_like(beta_attr):
    def export(ctx, op):
        x, out = _io(op)
        beta = op.attr(beta_attr) if beta_attr else 1.0
        arg = x if beta == 1.0 else ctx.node("Mul", [x, ctx.scalar(beta, x)])
        ctx.node("Mul", [x, ctx.node("Sigmoid", [arg])], out)
    return export


def _gelu(ctx, op):
    x, out = _io(op)
    if op.attr("approximate"):
        # 0.5 X (1 + tanh(sqrt(2/pi) (X + 0.044715 X^3)))
        cube = ctx.node("Mul", [ctx.node("Mul", [x, x]), x])
        inner = ctx.node("Add", [x, ctx.node("Mul", [cube, ctx.scalar(0.044715, x)])])
        t = ctx.node("Tanh", [ctx.node("Mul", [inner, ctx.scalar(math.sqrt(2 / math.pi), x)])])
    elif ctx.opset >= 20:
        ctx.node("Gelu", [x], out)
        return
    else:
        # 0.5 X (1 + erf(X / sqrt(2)))
        t = ctx.node("Erf", [ctx.node("Div", [x, ctx.scalar(math.sqrt(2.0), x)])])
    half_x = ctx.node("Mul", [x, ctx.scalar(0.5, x)])
    ctx.node("Mul", [half_x, ctx.node("Add", [t, ctx.scalar(1.0, x)])], out)


def _square(ctx, op):
    x, out = _io(op)
    ctx.node("Mul", [x, x], out)


def _rsqrt(ctx, op):
    x, out = _io(op)
    ctx.node("Reciprocal", [ctx.node("Sqrt", [x])], out)


def _round(ctx, op):
    # Paddle rounds half away from zero; ONNX's Round goes to even: sign(X) floor(|X| + 0.5).
    x, out = _io(op)
    if op.attr("decimals"):
        ctx.fail("round with decimals != 0 has no exporter", expected="decimals = 0",
                 found=f"decimals = {op.attr('decimals')}")
    up = ctx.node("Floor", [ctx.node("Add", [ctx.node("Abs", [x]), ctx.scalar(0.5, x)])])
    ctx.node("Mul", [ctx.node("Sign", [x]), up], out)


EXPORTERS = {
    "relu": unary("Relu"), "sigmoid": unary("Sigmoid"), "tanh": unary("Tanh"),
    "exp": unary("Exp"), "log": unary("Log"), "sqrt": unary("Sqrt"), "abs": unary("Abs"),
    "reciprocal": unary("Reciprocal"), "softsign": unary("Softsign"), "sin": unary("Sin"),
    "cos": unary("Cos"), "floor": unary("Floor"), "ceil": unary("Ceil"),
    "leaky_relu": _leaky_relu, "elu": _elu, "relu6": _relu6, "hard_sigmoid": _hard_sigmoid,
    "softplus": _softplus, "swish": _swish_like("beta"), "silu": _swish_like(None),
    "gelu": _gelu, "square": _square, "rsqrt": _rsqrt, "round": _round,
}
