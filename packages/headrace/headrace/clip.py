"""Gradient clipping, built from existing ops (op_role optimize).

- ``GradientClipByValue(max, min=-max)``: g = min(max(g, min), max) — ``elementwise_max`` and
  ``elementwise_min`` against [1]-shaped constants.
- ``GradientClipByNorm(clip_norm)``: g = g * clip_norm / max(||g||, clip_norm), with
  ||g|| = sqrt(reduce_sum(square(g))).
- ``GradientClipByGlobalNorm(clip_norm, group_name)``: every gradient of the group is scaled by
  clip_norm / max(global_norm, clip_norm), global_norm = sqrt(sum of the squared norms).

A clip applies to a parameter through ``ParamAttr(gradient_clip=...)``, through
:func:`set_gradient_clip` (all, or the listed, parameters of a program), or as the optimizer's
``grad_clip`` (parameters without their own). Clipping runs before regularization.
"""
from .checks import check_number
from .errors import LayerError
from .framework import Parameter, default_main_program
from .framework.builder import append_simple, constant
from .framework.program import OP_ROLE_OPTIMIZE

__all__ = ["BaseGradientClip", "GradientClipByValue", "GradientClipByNorm",
           "GradientClipByGlobalNorm", "set_gradient_clip", "append_gradient_clip_ops"]


class BaseGradientClip:
    """Base class. ``_process_context`` sees every (param, grad) first (global-norm clips
    gather there); ``_create_operators`` returns the (param, clipped grad) pair."""

    def _process_context(self, context, param, grad):
        pass

    def _create_operators(self, param, grad):
        raise NotImplementedError


def _key(grad):
    return f"{grad.name}@CLIP"


def _sq_norm(block, grad):
    """reduce_sum(square(grad)) over all elements, 0-D."""
    sq = append_simple(block, "square", {"X": grad}, key=_key(grad))
    return append_simple(block, "reduce_sum", {"X": sq}, {"reduce_all": True, "dim": [0]},
                         key=_key(grad))


class GradientClipByValue(BaseGradientClip):
    """Clip every gradient element into [min, max] (min defaults to -max)."""

    def __init__(self, max, min=None):
        max_ = check_number("GradientClipByValue", "max", max)
        min_ = -max_ if min is None else check_number("GradientClipByValue", "min", min)
        if min_ > max_:
            raise LayerError(f"GradientClipByValue: argument 'min' ({min_}) must not exceed "
                             f"'max' ({max_})")
        self.max, self.min = max_, min_

    def _create_operators(self, param, grad):
        block = grad.block
        lo = constant(block, self.min, grad.dtype, key=_key(grad))
        hi = constant(block, self.max, grad.dtype, key=_key(grad))
        g = append_simple(block, "elementwise_max", {"X": grad, "Y": lo}, key=_key(grad))
        return param, append_simple(block, "elementwise_min", {"X": g, "Y": hi}, key=_key(grad))

    def __repr__(self):
        return f"GradientClipByValue(max={self.max}, min={self.min})"


class GradientClipByNorm(BaseGradientClip):
    """Scale a gradient down to L2 norm ``clip_norm`` when its norm exceeds it."""

    def __init__(self, clip_norm):
        self.clip_norm = check_number("GradientClipByNorm", "clip_norm", clip_norm, above=0.0)

    def _create_operators(self, param, grad):
        block, key = grad.block, _key(grad)
        norm = append_simple(block, "sqrt", {"X": _sq_norm(block, grad)}, key=key)
        clip = constant(block, self.clip_norm, grad.dtype, key=key)
        denom = append_simple(block, "elementwise_max", {"X": norm, "Y": clip}, key=key)
        factor = append_simple(block, "elementwise_div", {"X": clip, "Y": denom}, key=key)
        return param, append_simple(block, "elementwise_mul", {"X": grad, "Y": factor}, key=key)

    def __repr__(self):
        return f"GradientClipByNorm(clip_norm={self.clip_norm})"


class GradientClipByGlobalNorm(BaseGradientClip):
    """Scale all gradients of ``group_name`` together so that their joint L2 norm is at most
    ``clip_norm``."""

    def __init__(self, clip_norm, group_name="default_group"):
        self.clip_norm = check_number("GradientClipByGlobalNorm", "clip_norm", clip_norm,
                                      above=0.0)
        if not isinstance(group_name, str) or not group_name:
            raise LayerError(f"GradientClipByGlobalNorm: argument 'group_name' must be a "
                             f"non-empty str, got {group_name!r}")
        self.group_name = group_name
        self._context = None

    def _process_context(self, context, param, grad):
        group = context.setdefault(("global_norm", self.group_name),
                                   {"clip_norm": self.clip_norm, "sq_norms": [], "scale": None})
        if group["clip_norm"] != self.clip_norm:
            raise LayerError(f"GradientClipByGlobalNorm: all clips of group "
                             f"'{self.group_name}' must share one clip_norm, found "
                             f"{group['clip_norm']} and {self.clip_norm}")
        group["sq_norms"].append(_sq_norm(grad.block, grad))
        self._context = context

    def _create_operators(self, param, grad):
        group = self._context[("global_norm", self.group_name)]
        block = grad.block
        if group["scale"] is None:
            key = f"{self.group_name}@GLOBAL_NORM"
            parts = group["sq_norms"]
            total = parts[0] if len(parts) == 1 else \
                append_simple(block, "sum", {"X": parts}, key=key)
            norm = append_simple(block, "sqrt", {"X": total}, key=key)
            clip = constant(block, self.clip_norm, grad.dtype, key=key)
            denom = append_simple(block, "elementwise_max", {"X": norm, "Y": clip}, key=key)
            group["scale"] = append_simple(block, "elementwise_div", {"X": clip, "Y": denom},
                                           key=key)
        return param, append_simple(block, "elementwise_mul", {"X": grad, "Y": group["scale"]},
                                    key=_key(grad))

    def __repr__(self):
        return f"GradientClipByGlobalNorm(clip_norm={self.clip_norm}, " \
               f"group_name={self.group_name!r})"


def set_gradient_clip(clip, param_list=None, program=None):
    """Give ``clip`` to every parameter of ``program`` (default: the default main program), or
    to those of ``param_list`` (Parameters or names)."""
    if not isinstance(clip, BaseGradientClip):
        raise LayerError(f"set_gradient_clip: argument 'clip' must be a GradientClipBy* object, "
                         f"got {type(clip).__name__}")
    program = program if program is not None else default_main_program()
    params = program.all_parameters()
    if param_list is not None:
        by_name = {p.name: p for p in params}
        chosen = []
        for p in param_list:
            name = p.name if isinstance(p, Parameter) else p
            if name not in by_name:
                raise LayerError(f"set_gradient_clip: '{name}' is not a parameter of the program")
            chosen.append(by_name[name])
        params = chosen
    for p in params:
        p.gradient_clip = clip


def append_gradient_clip_ops(params_grads, clip=None):
    """Clip every gradient whose parameter has a ``gradient_clip`` (or, without one, by
    ``clip``). Returns the new ``[(param, grad)]`` list."""
    if clip is not None and not isinstance(clip, BaseGradientClip):
        raise LayerError(f"append_gradient_clip_ops: argument 'clip' must be a GradientClipBy* "
                         f"object, got {type(clip).__name__}")
    context, chosen = {}, []
    for p, g in params_grads:
        c = getattr(p, "gradient_clip", None) or clip
        chosen.append(c)
        if c is not None and g is not None:
            with g.block.program.op_role_guard(OP_ROLE_OPTIMIZE):
                c._process_context(context, p, g)
    out = []
    for (p, g), c in zip(params_grads, chosen):
        if c is None or g is None:
            out.append((p, g))
            continue
        with g.block.program.op_role_guard(OP_ROLE_OPTIMIZE):
            out.append(c._create_operators(p, g))
    return out
