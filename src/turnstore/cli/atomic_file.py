"""Replacing a file atomically: the new content goes to a temporary file beside it, renamed over.

The temporary file gets the mode (and, where the user may set them, the owner and group) the
replaced file had, so a replaced `0664` export stays `0664`; a new file gets the mode a plain
`open()` would give it (`0666` less the umask). A path that is a symbolic link is written
through: the file it points to is replaced, and the link stays.
"""

from __future__ import annotations

import os
import secrets
import stat

__all__ = ["replaced_path", "temp_beside"]


def replaced_path(path: str) -> str:
    """The file that writing to `path` replaces: the target of a symbolic link, else `path`.

    Renaming over a link would replace the link by a plain file and leave its target as it
    was; a shell's `> FILE` writes the target, and so does this.
    """
    return os.path.realpath(path) if os.path.islink(path) else path


def temp_beside(path: str) -> tuple[int, str]:
    """Create a temporary file in the directory of `path`, to be renamed over it.

    Args:
        path: The file to replace (it need not exist).

    Returns:
        The open file descriptor (write-only) and the temporary file's path.

    Raises:
        OSError: The file cannot be created.
    """
    directory = os.path.dirname(os.path.abspath(path))
    while True:
        temp = os.path.join(directory, f".{os.path.basename(path)}.{secrets.token_hex(4)}.tmp")
        try:
            # 0o666: the umask applies, as for a file that open() creates.
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        break
    try:
        replaced = os.stat(path)
    except FileNotFoundError:
        return fd, temp
    try:
        # The owner first (a change of owner may clear the mode's set-id bits), then the mode.
        # Only what the user may set: root keeps both, others at most the group.
        for owner in ((replaced.st_uid, replaced.st_gid), (-1, replaced.st_gid)):
            try:
                os.fchown(fd, *owner)
                break
            except OSError:  # not allowed here, or a file system without owners
                continue
        os.fchmod(fd, stat.S_IMODE(replaced.st_mode))
    except BaseException:
        os.close(fd)
        os.unlink(temp)
        raise
    return fd, temp
