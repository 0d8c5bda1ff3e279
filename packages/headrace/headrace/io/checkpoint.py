"""All-or-nothing saves into a directory, and loads that follow nothing and trust nothing.

A save (``save_vars`` and its shorthands, ``save_inference_model``) writes every file of the
new checkpoint into a fresh hidden directory beside the target, together with the files of
the target that it does not rewrite (hard links: no copy) and a manifest of sizes and SHA-256
hashes; then one ``renameat2(RENAME_EXCHANGE)`` swaps the two directories, and the old one is
removed. Until that swap the previous checkpoint is untouched and loadable; after it, the new
one is complete. A save killed at any moment leaves the old or the new checkpoint, never a mix,
and its hidden directory is removed by the next save. Where the swap is impossible (a target
that is the working directory or a mount point, a parent directory that is not writable, a
kernel or filesystem without RENAME_EXCHANGE) the files are renamed into place one by one and
the manifest last: still no half-written file, and a mix of two saves is detected on load.

Names to files: a variable name is a relative path of non-empty components (no ``.``, ``..``,
NUL, none over 255 bytes); two names that would share a file or need a file to be a directory
are refused before anything is written. Loads open every path component without following
symbolic links, read only regular files (a FIFO would block forever), read no more than the
file's size, and check each file against the manifest when the directory has one (Paddle's
files stay byte-compatible; the manifest is a hidden extra file that Paddle ignores).
"""
import ctypes
import errno
import hashlib
import json
import logging
import os
import secrets
import shutil
import stat

from ..errors import HeadraceError
from .atomic import _fsync_dir
from .tensor_stream import ModelFileError, read_regular

__all__ = ["SaveError", "DirectorySave", "MANIFEST", "member_path", "read_member"]

_log = logging.getLogger(__name__)

MANIFEST = ".headrace-manifest.json"
NAME_MAX = 255
_STAGE, _OLD = "hrsave", "hrold"   # hidden siblings: .<base>.hrsave-<pid>-<token>


class SaveError(HeadraceError):
    """A save that could not complete; the previous files are kept as they were."""


# -- names to files ---------------------------------------------------------------------------

def member_path(name, what, error=SaveError):
    """The relative path ``name`` stands for inside a save directory, as a tuple of components,
    or an ``error`` saying why it cannot be one (a save checks before anything is written)."""
    if not isinstance(name, str) or not name:
        raise error(f"{what}: an empty name cannot be a file name")
    if "\0" in name:
        raise error(f"{what}: the name {name!r} holds a NUL byte, which no file name can")
    parts = tuple(name.split("/"))
    if name.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise error(f"{what}: the name {name!r} is not a plain relative path (an empty, "
                        f"'.' or '..' component, or a leading or trailing '/'), so it would "
                        f"not map to exactly one file inside the directory; save into one "
                        f"combined file (filename=...) instead")
    for p in parts:
        if len(os.fsencode(p)) > NAME_MAX:
            raise error(f"{what}: the name {name!r} has a component of "
                            f"{len(os.fsencode(p))} bytes; file names hold at most {NAME_MAX}; "
                            f"save into one combined file (filename=...) instead")
    if parts == (MANIFEST,):
        raise error(f"{what}: the name {name!r} is the checkpoint manifest's")
    return parts


def _check_distinct(paths):
    """Refuse two names for one file, and a name that needs another's file as a directory."""
    seen = {}
    for parts, what in paths:
        if parts in seen:
            raise SaveError(f"{what} and {seen[parts]} would be written to the same file "
                            f"'{'/'.join(parts)}'")
        seen[parts] = what
    for parts, what in paths:
        for i in range(1, len(parts)):
            if parts[:i] in seen:
                raise SaveError(f"{what} needs '{'/'.join(parts[:i])}' to be a directory, but "
                                f"{seen[parts[:i]]} is saved as that file")


# -- the save ---------------------------------------------------------------------------------

def _libc_renameat2():
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    return fn


_RENAMEAT2 = _libc_renameat2()


def _exchange(a, b):
    """Atomically swap directories ``a`` and ``b``; False where the system cannot."""
    if _RENAMEAT2 is None:
        return False
    if _RENAMEAT2(-100, os.fsencode(a), -100, os.fsencode(b), 2) == 0:  # AT_FDCWD, EXCHANGE
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EXDEV, errno.EBUSY,
               errno.EPERM):
        return False
    raise OSError(err, os.strerror(err), b)


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True   # another user's process: alive
    return True


def _clean_leftovers(target):
    """Remove the hidden directories of earlier saves of ``target`` whose process is gone; a
    target lost between the two renames of the fallback swap is first put back."""
    parent, base = os.path.split(target)
    try:
        entries = os.listdir(parent or ".")
    except OSError:
        return
    try:   # the fallback's stages, inside the target
        inner = [e for e in os.listdir(target) if e.startswith(f".{_STAGE}-")]
    except OSError:
        inner = []
    for entry in inner:
        pid = entry[len(_STAGE) + 2:].split("-", 1)[0]
        if pid.isdigit() and not _pid_alive(int(pid)):
            shutil.rmtree(os.path.join(target, entry), ignore_errors=True)
    for entry in entries:
        for kind in (_STAGE, _OLD):
            prefix = f".{base}.{kind}-"
            if not entry.startswith(prefix):
                continue
            pid = entry[len(prefix):].split("-", 1)[0]
            if not pid.isdigit() or _pid_alive(int(pid)):
                continue
            path = os.path.join(parent, entry)
            if kind == _OLD and not os.path.lexists(target):
                os.rename(path, target)   # the previous checkpoint, as it was
                continue
            shutil.rmtree(path, ignore_errors=True)


class _HashingFile:
    """A binary file that counts and hashes what is written through it."""

    def __init__(self, f):
        self.f, self.size, self.sha = f, 0, hashlib.sha256()

    def write(self, data):
        self.sha.update(data)
        self.size += len(data)
        return self.f.write(data)


class DirectorySave:
    """One all-or-nothing save into ``dirname`` (see the module's docstring).

    ``open(name, what)`` gives a binary file for the member ``name`` (a variable name or file
    name, checked); ``commit()`` makes the whole save visible at once; as a context manager it
    commits on success and removes everything it wrote on any exception.
    """

    def __init__(self, dirname):
        # The real path: a target that is a link to a directory is saved where it points, and
        # the link stays a link.
        self.target = os.path.realpath(dirname)
        self._files = {}   # parts -> (what, _HashingFile, real file)
        self._stage = None
        if os.path.lexists(self.target) and not os.path.isdir(self.target):
            raise SaveError(f"cannot save into '{dirname}': it is a file, not a directory; "
                            f"it is left as it was")
        try:
            _clean_leftovers(self.target)
            self._stage = self._make_stage()
        except OSError as e:
            raise self._error("cannot prepare the save", e) from None

    def _error(self, doing, e):
        kept = "the previous files are unchanged" if os.path.lexists(self.target) else \
            "nothing was written"
        reason = e.strerror or str(e)
        if getattr(e, "errno", None) == errno.ENOSPC:
            reason = "no space left on the device"
        return SaveError(f"saving into '{self.target}' failed: {doing}: {reason} "
                         f"({getattr(e, 'filename', None) or self.target}); {kept}")

    def _make_stage(self):
        parent, base = os.path.split(self.target)
        cwd = os.getcwd()
        inside = cwd == self.target or cwd.startswith(self.target + os.sep)
        if not inside and os.access(parent, os.W_OK):
            return os.path.join(parent, f".{base}.{_STAGE}-{os.getpid()}-"
                                        f"{secrets.token_hex(6)}")
        # The fallback: stage inside the target (files are renamed into place one by one).
        os.makedirs(self.target, exist_ok=True)
        return os.path.join(self.target, f".{_STAGE}-{os.getpid()}-{secrets.token_hex(6)}")

    @property
    def _swaps(self):
        return os.path.dirname(self._stage) != self.target

    def open(self, name, what):
        parts = member_path(name, what)
        _check_distinct([(p, w) for p, (w, _, _) in self._files.items()] + [(parts, what)])
        path = os.path.join(self._stage, *parts)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            f = open(path, "xb")
        except OSError as e:
            raise self._error(f"cannot create the file for {what}", e) from None
        hf = _HashingFile(f)
        self._files[parts] = (what, hf, f)
        return hf

    def write(self, name, what, data):
        self.open(name, what).write(data)

    def commit(self):
        try:
            entries = {}
            for parts, (_, hf, f) in self._files.items():
                f.flush()
                os.fsync(f.fileno())
                f.close()
                entries["/".join(parts)] = {"size": hf.size, "sha256": hf.sha.hexdigest()}
            if self._swaps:
                self._commit_swap(entries)
            else:
                self._commit_in_place(entries)
            _log.info("saved %d file(s) into %s (%s)", len(entries), self.target,
                      "swapped in whole" if self._swaps else "renamed into place one by one")
        except OSError as e:
            raise self._error("cannot commit the save", e) from None
        finally:
            self.abort()

    def _check_target_paths(self):
        """Each file this save writes must land at its own path in the target: refused where
        the target has a directory in its place (whose files would be lost) or a symbolic link
        or file where it needs a directory (a link would carry the write elsewhere)."""
        for parts in self._files:
            full = os.path.join(self.target, *parts)
            if os.path.isdir(full) and not os.path.islink(full):
                raise SaveError(f"the save writes '{'/'.join(parts)}' as a file, but "
                                f"'{self.target}' holds a directory of that name")
            for i in range(1, len(parts)):
                up = os.path.join(self.target, *parts[:i])
                if os.path.lexists(up) and (os.path.islink(up) or not os.path.isdir(up)):
                    raise SaveError(f"the save writes '{'/'.join(parts)}', but "
                                    f"'{'/'.join(parts[:i])}' in '{self.target}' is "
                                    f"{'a symbolic link' if os.path.islink(up) else 'a file'}"
                                    f", not a directory (links are not followed)")

    def _keep_old(self, entries):
        """Link the target's files that this save does not rewrite into the stage, and carry
        their manifest entries over."""
        if not os.path.isdir(self.target):
            return entries
        old = _read_manifest(self.target)
        mode = stat.S_IMODE(os.stat(self.target).st_mode)
        self._check_target_paths()
        for root, dirs, files in os.walk(self.target):
            rel = os.path.relpath(root, self.target)
            rel = () if rel == "." else tuple(rel.split(os.sep))
            for d in dirs:
                if os.path.islink(os.path.join(root, d)):
                    files.append(d)   # a link to a directory: kept as a link, not entered
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))
                       and not (not rel and d.startswith(f".{_STAGE}-"))]  # others' stages
            for name in files:
                parts = rel + (name,)
                if parts in self._files or parts == (MANIFEST,):
                    continue
                src, dst = os.path.join(root, name), os.path.join(self._stage, *parts)
                clash = next((parts[:i] for i in range(1, len(parts))
                              if parts[:i] in self._files), None)
                if clash is not None:
                    raise SaveError(f"the save writes '{'/'.join(clash)}' as a file, but "
                                    f"'{self.target}' holds a directory of that name with "
                                    f"'{'/'.join(parts)}' in it")
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                st = os.lstat(src)
                if stat.S_ISLNK(st.st_mode):
                    os.symlink(os.readlink(src), dst)
                elif stat.S_ISREG(st.st_mode):
                    try:
                        os.link(src, dst, follow_symlinks=False)
                    except OSError:
                        shutil.copy2(src, dst, follow_symlinks=False)
                else:
                    raise SaveError(f"'{src}' is not a regular file (mode "
                                    f"{stat.filemode(st.st_mode)}); a checkpoint directory "
                                    f"holds files only, so the save stops here")
                if "/".join(parts) in old:
                    entries.setdefault("/".join(parts), old["/".join(parts)])
        os.chmod(self._stage, mode)
        return entries

    def _commit_swap(self, entries):
        os.makedirs(self._stage, exist_ok=True)
        entries = self._keep_old(entries)
        _write_manifest(self._stage, entries)
        for root, _, _ in os.walk(self._stage):
            _fsync_dir(root)
        if not os.path.lexists(self.target):
            os.rename(self._stage, self.target)
        elif not _exchange(self._stage, self.target):
            # Two renames: a save killed between them leaves the old checkpoint under its
            # hidden name, which the next save (or a look at the directory) puts back.
            parent, base = os.path.split(self.target)
            old = os.path.join(parent, f".{base}.{_OLD}-{os.getpid()}-{secrets.token_hex(6)}")
            os.rename(self.target, old)
            os.rename(self._stage, self.target)
            self._stage = old
        _fsync_dir(os.path.dirname(self.target))
        # The old checkpoint now sits at the stage's name: abort() removes it.

    def _commit_in_place(self, entries):
        self._check_target_paths()
        old = _read_manifest(self.target)
        entries = {**{k: v for k, v in old.items()
                      if tuple(k.split("/")) not in self._files
                      and os.path.isfile(os.path.join(self.target, k))}, **entries}
        for parts in self._files:
            dst = os.path.join(self.target, *parts)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            os.replace(os.path.join(self._stage, *parts), dst)
        _write_manifest(self._stage, entries)
        os.replace(os.path.join(self._stage, MANIFEST), os.path.join(self.target, MANIFEST))
        _fsync_dir(self.target)

    def abort(self):
        for _, _, f in self._files.values():
            try:
                f.close()
            except OSError:
                pass
        if self._stage is not None:
            shutil.rmtree(self._stage, ignore_errors=True)
            self._stage = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.commit()
            return False
        self.abort()
        if issubclass(exc_type, OSError):   # a full disk while writing, say
            raise self._error("writing the files failed", exc) from exc
        return False


# -- the manifest and the loads -----------------------------------------------------------------

def _write_manifest(directory, entries):
    data = json.dumps({"format": 1, "files": dict(sorted(entries.items()))}, indent=1)
    with open(os.path.join(directory, MANIFEST), "w", encoding="utf-8") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _read_manifest(directory):
    """``{relative path: {"size", "sha256"}}``, {} where there is no manifest."""
    try:
        raw = read_regular(directory, (MANIFEST,), "the checkpoint manifest")
    except ModelFileError as e:
        if "no such file" in str(e):
            return {}
        raise
    try:
        files = json.loads(raw.decode("utf-8"))["files"]
        ok = all(isinstance(v.get("size"), int) and isinstance(v.get("sha256"), str)
                 for v in files.values())
    except (ValueError, KeyError, TypeError, AttributeError):
        ok = False
    if not ok:
        raise ModelFileError("the checkpoint manifest is not valid", os.path.join(directory,
                                                                                 MANIFEST))
    return files


def read_member(directory, name, what, manifest=None):
    """The bytes of the member ``name`` of a save directory, checked against its manifest
    (``manifest``: the directory's, when the caller read it once for many members)."""
    parts = member_path(name, what, ModelFileError)
    data = read_regular(directory, parts, what)
    manifest = _read_manifest(directory) if manifest is None else manifest
    entry = manifest.get("/".join(parts))
    if entry is not None:
        if len(data) != entry["size"] or hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise ModelFileError(f"{what} does not match the checkpoint's manifest: the "
                                 f"file is corrupted, or belongs to another save (a torn or "
                                 f"mixed checkpoint)", os.path.join(directory, *parts),
                                 expected=f"{entry['size']} bytes, sha256 "
                                          f"{entry['sha256'][:16]}...",
                                 found=f"{len(data)} bytes, sha256 "
                                       f"{hashlib.sha256(data).hexdigest()[:16]}...")
    return data


def read_manifest(directory):
    """The directory's manifest entries (see :func:`read_member`)."""
    return _read_manifest(directory)
