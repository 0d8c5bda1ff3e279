"""Names from a program file, made safe to print: a crafted file cannot forge listing lines.

A variable or op name read from a ProgramDesc is any string the file's author chose: a newline
in it would start a fake line of ``headrace show``'s listing, an escape sequence would move the
cursor or recolour a terminal, a bidirectional override would reorder what the reader sees.
``printable`` writes every character that ``str.isprintable`` refuses (Unicode's "Other" and
"Separator" categories but the space: controls, format characters such as U+202E, line and
paragraph separators) as a Python escape, and a backslash as two, so the escaped text is
unambiguous. Ordinary names come back unchanged.
"""

__all__ = ["printable"]


_SHORT = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(c):
    if c in _SHORT:
        return _SHORT[c]
    if c.isprintable():
        return c
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def printable(text):
    """``text`` with non-printable characters and backslashes escaped (see the module)."""
    if text.isprintable() and "\\" not in text:
        return text
    return "".join(map(_escape, text))
