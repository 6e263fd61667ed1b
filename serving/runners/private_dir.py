"""A directory of this user's that no other user can write to, for small files
the processes of one user share on a machine (the node CPU claims):
``$XDG_RUNTIME_DIR/batchline``, else ``$TMPDIR/batchline-<uid>``. In a shared
temp directory anyone can create that name (or a link) first: such a directory
is refused (:class:`UnsafeDir`), never used or changed.
"""

from __future__ import annotations

import os
import stat
import tempfile


class UnsafeDir(OSError):
    """The directory is not this user's alone (another owner, a link, group or other access)."""


def default_private_dir() -> str:
    """Where this user's private batchline directory is (it may not exist yet)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(runtime):
        return os.path.join(runtime, "batchline")
    return os.path.join(tempfile.gettempdir(), f"batchline-{os.geteuid()}")


def open_private_dir(path: str) -> int:
    """A file descriptor of directory ``path``, created with mode 0700 if missing.

    Files are then opened relative to it (``dir_fd``), so what was checked is what
    is used. Raises :class:`UnsafeDir` for a directory that is not this user's
    alone, OSError where it cannot be made or opened (a link is not followed)."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if st.st_uid != os.geteuid():
            raise UnsafeDir(f"{path} belongs to uid {st.st_uid}, not to this user ({os.geteuid()})")
        if stat.S_IMODE(st.st_mode) & 0o077:
            raise UnsafeDir(
                f"{path} has mode {stat.S_IMODE(st.st_mode):04o}: other users may write to it (0700 needed)"
            )
    except BaseException:
        os.close(fd)
        raise
    return fd
