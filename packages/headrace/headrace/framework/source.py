"""Where in the user's code an op was created: the innermost frame outside headrace."""
import linecache
import sys

__all__ = ["user_callsite"]


def _internal(frame):
    # headrace itself and its first-party plugins (headrace_math, ...) are not the user's code.
    return frame.f_globals.get("__name__", "").startswith("headrace")


def user_callsite():
    """``'File "x.py", line 12, in f\\n    y = layers.fc(...)'`` for the innermost user frame,
    in the format of Paddle's op_callstack attribute; None if every frame is internal."""
    frame = sys._getframe(1)
    while frame is not None and _internal(frame):
        frame = frame.f_back
    if frame is None:
        return None
    code = frame.f_code
    line = linecache.getline(code.co_filename, frame.f_lineno).strip()
    text = f'File "{code.co_filename}", line {frame.f_lineno}, in {code.co_name}'
    return f"{text}\n    {line}" if line else text
