"""Atomic file writes: a save either completes or leaves the previous file as it was.

A file is written under a temporary name in the same directory (same filesystem, so the final
``os.replace`` is an atomic rename), flushed and fsynced before the rename, and the directory is
fsynced after it, so a crash never leaves a half-written model or checkpoint under the real name.

Saves that write several files (one file per variable, a model plus its parameters) go through
:class:`AtomicFileSet`: every file is written to its temporary first, and only when all of them
were written completely are they renamed into place, one after another. A failure while writing
(a missing value, a full disk, an exception in the caller) therefore replaces nothing.
"""
import contextlib
import os
import secrets

__all__ = ["atomic_write", "write_bytes", "AtomicFileSet"]

# O_BINARY exists only on Windows; O_CLOEXEC keeps the descriptor out of child processes.
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | \
    getattr(os, "O_CLOEXEC", 0)


def _temp_path(path):
    # A hidden name next to the target: same directory, hence same filesystem for os.replace.
    head, tail = os.path.split(path)
    return os.path.join(head, f".{tail}.{secrets.token_hex(6)}.tmp")


def _open_temp(path):
    while True:
        tmp = _temp_path(path)
        try:
            # Mode 0o666 is narrowed by the umask, as for a file opened with open(path, "wb");
            # mkstemp's 0o600 would make saved models unreadable for other users.
            fd = os.open(tmp, _FLAGS, 0o666)
        except FileExistsError:  # a collision of 48 random bits: pick another name
            continue
        return tmp, os.fdopen(fd, "wb")


def _fsync_dir(directory):
    # Makes the rename itself durable. Not every platform can open a directory (Windows):
    # the rename is still atomic there, only its durability across a power cut is weaker.
    try:
        fd = os.open(directory or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _discard(tmp, f):
    try:
        f.close()
    except OSError:
        pass
    try:
        os.unlink(tmp)
    except OSError:
        pass


class AtomicFileSet:
    """Several files written atomically as a group.

    ``open(path)`` gives a binary file object writing to a temporary; ``commit()`` syncs and
    renames all of them into place; ``abort()`` removes the temporaries. Used as a context
    manager it commits on success and aborts on any exception.
    """

    def __init__(self):
        self._pending = []  # (final path, temp path, file object)

    def open(self, path):
        tmp, f = _open_temp(path)
        self._pending.append((path, tmp, f))
        return f

    def write(self, path, data):
        self.open(path).write(data)

    def commit(self):
        try:
            # Everything reaches the disk before any rename: after a crash a renamed file is
            # never empty or partial.
            for _, _, f in self._pending:
                f.flush()
                os.fsync(f.fileno())
                f.close()
            dirs = []
            while self._pending:
                path, tmp, _ = self._pending[0]
                os.replace(tmp, path)
                self._pending.pop(0)
                d = os.path.dirname(path)
                if d not in dirs:
                    dirs.append(d)
            for d in dirs:
                _fsync_dir(d)
        finally:
            self.abort()  # whatever was not renamed (a failed fsync or replace) is removed

    def abort(self):
        for _, tmp, f in self._pending:
            _discard(tmp, f)
        self._pending = []

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.commit()
        else:
            self.abort()
        return False


@contextlib.contextmanager
def atomic_write(path):
    """``with atomic_write(path) as f:`` writes ``f`` to ``path`` atomically (binary)."""
    with AtomicFileSet() as files:
        yield files.open(path)


def write_bytes(path, data):
    """Write ``data`` to ``path`` atomically."""
    with atomic_write(path) as f:
        f.write(data)
