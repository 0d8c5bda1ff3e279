"""Where in the user's code an op was created, or a warning is to point: the innermost frame
outside headrace."""
import linecache
import sys
import threading

__all__ = ["user_callsite", "user_stacklevel", "pinned"]

_INTERNAL = ("headrace", "pluggy")


def _internal(frame):
    # headrace itself and its first-party plugins (headrace_math, ...) are not the user's code;
    # nor is pluggy, through which the registry may call a plugin's hooks.
    return frame.f_globals.get("__name__", "").startswith(_INTERNAL)


def _bootstrap(frame):
    # The import machinery's frames, which warnings.warn skips when it counts stacklevel.
    name = frame.f_code.co_filename
    return "importlib" in name and "_bootstrap" in name


def user_stacklevel():
    """The ``stacklevel`` that makes ``warnings.warn``, called by the caller of this function,
    blame the innermost frame outside headrace (the user's line that loaded a plugin, ran a
    program, ...), however deep inside headrace the warning is raised; the outermost frame when
    every frame is headrace's (the ``headrace`` command)."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and (_internal(frame) or _bootstrap(frame)):
        frame = frame.f_back
        if not _bootstrap(frame):
            level += 1
    return level


_CALLSITES = {}  # (code, instruction) -> text: a loop building a network asks for a few


_pin = threading.local()   # .site: (text,) that user_callsite gives inside pinned()


class pinned:
    """``with pinned(internal):`` -- inside, :func:`user_callsite` gives what it gave the
    caller of ``pinned`` (read once, when ``internal`` is true), without walking the frames
    again. For loops of headrace's own code that append many ops (the backward pass, an
    optimizer's update ops): every frame between them and the op's ``prepare_op`` is
    headrace's, so the innermost user frame is the loop's. Give ``internal`` false where user
    code may run inside (a user's initializer or optimizer subclass): nothing is pinned."""

    def __init__(self, internal=True):
        self._site = (user_callsite(),) if internal else None

    def __enter__(self):
        self._old = getattr(_pin, "site", None)
        _pin.site = self._site   # None: the frames are walked (an outer pin is lifted)
        return self

    def __exit__(self, *exc):
        _pin.site = self._old


def user_callsite(depth=1):
    """``'File "x.py", line 12, in f\\n    y = layers.fc(...)'`` for the innermost user frame,
    in the format of Paddle's op_callstack attribute; None if every frame is internal.
    ``depth``: the frames above this call to start from (1: its caller)."""
    site = getattr(_pin, "site", None)
    if site is not None:
        return site[0]
    frame = sys._getframe(depth)
    # _internal, inlined: every op built walks the frames of the layers that built it.
    while frame is not None and frame.f_globals.get("__name__", "").startswith(_INTERNAL):
        frame = frame.f_back
    if frame is None:
        return None
    # Keyed by the code object and the instruction: f_lineno scans the code's line table
    # (longer the further down a long function the call is), read once per call site here.
    code = frame.f_code
    key = (code, frame.f_lasti)
    text = _CALLSITES.get(key)
    if text is None:
        if len(_CALLSITES) > 4096:  # bounded: generated code can have endless sites
            _CALLSITES.clear()
        lineno = frame.f_lineno
        line = linecache.getline(code.co_filename, lineno).strip()
        text = f'File "{code.co_filename}", line {lineno}, in {code.co_name}'
        text = _CALLSITES[key] = f"{text}\n    {line}" if line else text
    return text
