"""Where in the user's code an op was created, or a warning is to point: the innermost frame
outside headrace."""
import linecache
import sys

__all__ = ["user_callsite", "user_stacklevel"]

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


_CALLSITES = {}  # (file, line, function) -> text: a loop building a network asks for a few


def user_callsite():
    """``'File "x.py", line 12, in f\\n    y = layers.fc(...)'`` for the innermost user frame,
    in the format of Paddle's op_callstack attribute; None if every frame is internal."""
    frame = sys._getframe(1)
    # _internal, inlined: every op built walks the frames of the layers that built it.
    while frame is not None and frame.f_globals.get("__name__", "").startswith(_INTERNAL):
        frame = frame.f_back
    if frame is None:
        return None
    code = frame.f_code
    key = (code.co_filename, frame.f_lineno, code.co_name)
    text = _CALLSITES.get(key)
    if text is None:
        if len(_CALLSITES) > 4096:  # bounded: generated code can have endless sites
            _CALLSITES.clear()
        line = linecache.getline(code.co_filename, frame.f_lineno).strip()
        text = f'File "{code.co_filename}", line {frame.f_lineno}, in {code.co_name}'
        text = _CALLSITES[key] = f"{text}\n    {line}" if line else text
    return text
