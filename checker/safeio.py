"""Files read and written on the user's behalf, opened so that another user of the machine cannot redirect them.

- Inputs (`open_input`, `read_bytes`) are regular files only, opened without blocking (a FIFO does not hang the
  open) and read up to a limit counted in bytes read, never in a size the file claims.
- Outputs (`replacing`, `write_text`) are written to a new file beside the target and renamed into place, so a
  reader never sees half a file and a symbolic link at the target is replaced, not written through; a link is
  followed only when its owner is the user or root (`/dev/stdout`, a link of one's own).
- Files a run makes for itself (`create_new`) are created exclusively, never through a link.
- Private directories (`private_directory`) are opened once, by descriptor, after checking, as ssh's StrictModes
  does, that no other user can change what the path leads to or what the directory holds.

Every refusal is a `FileRefused`, an `OSError` whose `strerror` says why, so a caller's `except OSError` reports it.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, BinaryIO

MAX_LINK_HOPS = 16  # symbolic links followed on the way to one output file


class FileRefused(OSError):
    """A file or directory Lockstep will not use; `strerror` says why."""

    def __init__(self, why: str, code: int = errno.EINVAL):
        super().__init__(code, why)

    def __str__(self) -> str:
        return self.strerror


def kind(mode: int) -> str:
    """What a file of this mode is, in words."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def _trusted(uid: int) -> bool:
    return uid in (0, os.geteuid())


# -- inputs ------------------------------------------------------------------------------------------------------

def open_input(path: str, follow: bool = True, dir_fd: int | None = None) -> BinaryIO:
    """A regular file, open for reading (binary). `follow=False`: a symbolic link at `path` is refused (for names
    that come from data, such as the files a checkpoint's manifest lists)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags, dir_fd=dir_fd)
    except OSError as e:
        if e.errno == errno.ELOOP and not follow:
            raise FileRefused("it is a symbolic link (not followed here)", errno.ELOOP) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise FileRefused(f"it is {kind(mode)}, not a regular file",
                              errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str, limit: int, what: str = "file", follow: bool = True, dir_fd: int | None = None) -> bytes:
    """A whole regular file, refused (FileRefused) if it holds more than `limit` bytes: at most limit + 1 are read."""
    with open_input(path, follow, dir_fd) as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise FileRefused(f"more than the limit of {limit:,} bytes for a {what}", errno.EFBIG)
    return data


# -- outputs -----------------------------------------------------------------------------------------------------

def _output_target(path: str) -> tuple[int | None, str, os.stat_result | None]:
    """Where writing `path` goes: (an open descriptor of its directory, the file's name there, what is there now),
    after following the symbolic links at the final component that the user or root owns; (None, path, None) for a
    link into /proc (`/dev/stdout`), which is written through as it is."""
    for _ in range(MAX_LINK_HOPS):
        directory, name = os.path.split(os.path.abspath(path))
        if not name:
            raise FileRefused("it is the root directory; name a file to write", errno.EISDIR)
        if directory.startswith("/proc/"):
            return None, path, None
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            return dfd, name, None
        except BaseException:
            os.close(dfd)
            raise
        if not stat.S_ISLNK(st.st_mode):
            return dfd, name, st
        try:
            if not _trusted(st.st_uid):
                raise FileRefused(f"it is a symbolic link owned by another user (uid {st.st_uid}): not written "
                                  "through; remove it or name another file", errno.EPERM)
            path = os.path.join(directory, os.readlink(name, dir_fd=dfd))
        finally:
            os.close(dfd)
    raise FileRefused(f"more than {MAX_LINK_HOPS} symbolic links on the way", errno.ELOOP)


def check_output(path: str) -> None:
    """Refuse now (FileRefused) an output path that could not be written: a directory, a missing or read-only
    directory, a symbolic link of another user, a special file of another user."""
    dfd, name, st = _output_target(path)
    if dfd is None:
        return
    try:
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise FileRefused("it is a directory; name a file to write", errno.EISDIR)
        if st is not None and not stat.S_ISREG(st.st_mode) and not _trusted(st.st_uid):
            raise FileRefused(f"it is {kind(st.st_mode)} of another user (uid {st.st_uid})", errno.EPERM)
        if not os.access(".", os.W_OK | os.X_OK, dir_fd=dfd):
            raise FileRefused("its directory is not writable", errno.EACCES)
    finally:
        os.close(dfd)


@contextmanager
def replacing(path: str, binary: bool = False, durable: bool = False) -> Iterator[IO]:
    """A file object whose contents become `path` when the block ends without an exception: written to a new
    file in the target's directory (created exclusively, never through a link) and renamed over the target, so a
    reader sees the old file or the new one, never half of one. An existing device or FIFO (`/dev/null`, a
    terminal) of the user or root is written in place. `durable`: the data and the rename reach the disk."""
    dfd, name, fd, tmp = _start_output(path)
    if dfd is None:
        with os.fdopen(fd, "wb" if binary else "w", **_text(binary)) as f:
            yield f
        return
    try:
        with os.fdopen(fd, "w+b" if binary else "w", **_text(binary)) as f:
            yield f
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        if durable:
            os.fsync(dfd)
    except BaseException:
        _discard(tmp, dfd)
        raise
    finally:
        os.close(dfd)


def create_fresh(path: str, binary: bool = False, buffering: int = -1) -> IO:
    """A new, empty file at `path`, open for writing as it fills (a log that may be read meanwhile): made beside
    the target and renamed over it at once, so what was at `path` (a file, a link, a hard link to another file) is
    replaced, never written through or truncated. An existing device or FIFO of the user or root is written."""
    dfd, name, fd, tmp = _start_output(path)
    if dfd is not None:
        try:
            os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            os.close(fd)
            _discard(tmp, dfd)
            raise
        finally:
            os.close(dfd)
    return os.fdopen(fd, "wb" if binary else "w", buffering, **_text(binary))


def _start_output(path: str) -> tuple[int | None, str, int, str]:
    """Begin writing `path`: (its directory's descriptor, its name there, a descriptor to write, the name of the new
    file in that directory). An existing special file of the user or root is opened in place: no directory then."""
    dfd, name, st = _output_target(path)
    if dfd is None or (st is not None and not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode)):
        return None, name, _open_special(dfd, name, st), ""
    try:
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise FileRefused("it is a directory; name a file to write", errno.EISDIR)
        tmp, fd = _new_file(dfd, f".{name}.", ".tmp", 0o666)
        if st is not None and st.st_uid == os.geteuid():
            os.fchmod(fd, stat.S_IMODE(st.st_mode))  # a file replaced keeps its permissions
        return dfd, name, fd, tmp
    except BaseException:
        os.close(dfd)
        raise


def _discard(tmp: str, dfd: int) -> None:
    try:
        os.unlink(tmp, dir_fd=dfd)
    except OSError:
        pass


def _open_special(dfd: int | None, name: str, st: os.stat_result | None) -> int:
    """A descriptor for writing an existing special file of the user or root, in place (closes `dfd`)."""
    try:
        if st is not None and not _trusted(st.st_uid):
            raise FileRefused(f"it is {kind(st.st_mode)} of another user (uid {st.st_uid})", errno.EPERM)
        # appending: /dev/stdout may be a file the shell opened, which this open must not write over from its start
        return os.open(name, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC | (0 if dfd is None else os.O_NOFOLLOW), dir_fd=dfd)
    finally:
        if dfd is not None:
            os.close(dfd)


def _text(binary: bool) -> dict[str, str]:
    return {} if binary else {"encoding": "utf-8"}


def write_text(path: str, text: str) -> None:
    """Replace `path` with `text` (UTF-8), as `replacing` does."""
    with replacing(path) as f:
        f.write(text)


def _new_file(dfd: int, prefix: str, suffix: str, mode: int) -> tuple[str, int]:
    """A new file of a random name in directory `dfd`, created exclusively: (its name, a descriptor open rw)."""
    while True:
        name = f"{prefix}{os.urandom(6).hex()}{suffix}"  # as secrets.token_hex, without importing secrets at start-up
        try:
            return name, os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode,
                                 dir_fd=dfd)
        except FileExistsError:
            continue


def create_new(path: str, binary: bool = False, buffering: int = -1) -> IO:
    """A file that must not exist yet, created (mode 0600) for writing: never an existing file, never through a
    link (for the files a run makes in a directory of its own)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    return os.fdopen(fd, "wb" if binary else "w", buffering, **_text(binary))


def open_append(path: str, binary: bool = False, buffering: int = -1) -> IO:
    """An existing regular file (not a link), open for appending."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise FileRefused(f"it is {kind(mode)}, not a regular file")
        return os.fdopen(fd, "ab" if binary else "a", buffering, **_text(binary))
    except BaseException:
        os.close(fd)
        raise


# -- private directories -----------------------------------------------------------------------------------------

def private_directory(path: str, create: bool = True) -> int:
    """An open descriptor of directory `path` (made, mode 0700, with any missing parents, when `create`), once it
    is shown that only the user (and root) can change it: the directory is the user's and writable by no one else;
    every directory above it, and every symbolic link on the way, belongs to the user or root, and a directory
    above it that others may write is sticky (they cannot rename what is not theirs). Each component is opened
    relative to the one before, without following links, so the path is resolved once: what the descriptor is
    stays checked whatever happens to the path afterwards. FileRefused names the component and the fix."""
    todo = [p for p in reversed(os.path.abspath(path).split("/")) if p]
    stack = [(os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), "/")]
    hops = 0
    try:
        _check_directory(os.fstat(stack[0][0]), "/", last=False)
        while todo:
            name = todo.pop()
            if name in ("", "."):
                continue
            if name == "..":
                if len(stack) > 1:
                    os.close(stack.pop()[0])
                continue
            dfd, where = stack[-1]
            here = os.path.join(where, name)
            try:
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(name, 0o700, dir_fd=dfd)
                except FileExistsError:
                    pass
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                if not _trusted(st.st_uid):
                    raise FileRefused(f"{here} is a symbolic link owned by another user (uid {st.st_uid})",
                                      errno.EPERM)
                hops += 1
                if hops > MAX_LINK_HOPS:
                    raise FileRefused(f"{path}: more than {MAX_LINK_HOPS} symbolic links on the way", errno.ELOOP)
                target = os.readlink(name, dir_fd=dfd)
                if target.startswith("/"):
                    while len(stack) > 1:
                        os.close(stack.pop()[0])
                todo.extend(p for p in reversed(target.split("/")) if p)
                continue
            try:
                fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
            except OSError as e:
                raise FileRefused(f"{here}: {e.strerror} (it changed while it was checked?)", e.errno) from None
            stack.append((fd, here))
            _check_directory(os.fstat(fd), here, last=not todo)
        _check_directory(os.fstat(stack[-1][0]), stack[-1][1], last=True)
        return stack.pop()[0]
    finally:
        for fd, _ in stack:
            os.close(fd)


def _check_directory(st: os.stat_result, where: str, last: bool) -> None:
    """StrictModes: a directory on the way belongs to the user or root, and is sticky if others may write to it;
    the directory itself is the user's and only the user's to write."""
    mode = stat.S_IMODE(st.st_mode)
    others_write = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if last:
        if st.st_uid != os.geteuid():
            raise FileRefused(f"{where} is owned by uid {st.st_uid}, not by you (uid {os.geteuid()})", errno.EPERM)
        if others_write:
            raise FileRefused(f"{where} may be written by other users (mode {mode:04o}); make it private: "
                              f"chmod go-w {where}", errno.EPERM)
    elif not _trusted(st.st_uid):
        raise FileRefused(f"{where} belongs to another user (uid {st.st_uid}), who could replace what it holds",
                          errno.EPERM)
    elif others_write and not st.st_mode & stat.S_ISVTX:
        raise FileRefused(f"{where} may be written by other users (mode {mode:04o}) and is not sticky: they could "
                          "replace what it holds", errno.EPERM)


# -- code ---------------------------------------------------------------------------------------------------------

def code_file(path: str, what: str = "file") -> str:
    """The resolved path of Python file `path`, once it is shown that no other user can change what it runs: it is
    a regular file, it and every directory above it belong to the user or root, and none of them may be written by
    others (a directory others may write must be sticky; group write is allowed to the user's own group only).
    The caller imports the returned path, with every symbolic link already resolved, so a link re-pointed after
    this check changes nothing. FileRefused names the file or directory and the fix."""
    real = os.path.realpath(path)
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise FileRefused(f"{what} {path} changed while it was checked (a symbolic link appeared)", e.errno) from None
        raise
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    if not stat.S_ISREG(st.st_mode):
        raise FileRefused(f"{what} {path} is {kind(st.st_mode)}, not a regular file", errno.EINVAL)
    _check_code(st, real, what, directory=False)
    here = os.path.dirname(real)
    while True:
        _check_code(os.stat(here), here, what, directory=True)
        if here == "/":
            return real
        here = os.path.dirname(here)


def _check_code(st: os.stat_result, where: str, what: str, directory: bool) -> None:
    """Refuse a file (or a directory above it) that a user other than the caller or root could change."""
    mode = stat.S_IMODE(st.st_mode)
    if not _trusted(st.st_uid):
        raise FileRefused(f"{where} belongs to another user (uid {st.st_uid}), who could change the {what}'s code: "
                          "copy it somewhere that is yours", errno.EPERM)
    shared = st.st_mode & stat.S_IWOTH or (st.st_mode & stat.S_IWGRP and st.st_gid != os.getegid())
    if shared and not (directory and st.st_mode & stat.S_ISVTX):
        raise FileRefused(f"{where} may be written by other users (mode {mode:04o}), who could change the {what}'s "
                          f"code: chmod go-w {where}", errno.EPERM)
