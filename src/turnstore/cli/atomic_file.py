"""Replacing a file atomically: the new content goes to a temporary file beside it, renamed over.

The temporary file gets the mode the replaced file had, so a replaced `0664` export stays
`0664`; a new file gets the mode a plain `open()` would give it (`0666` less the umask).
"""

from __future__ import annotations

import os
import secrets
import stat

__all__ = ["temp_beside"]


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
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return fd, temp
    try:
        os.fchmod(fd, mode)
    except BaseException:
        os.close(fd)
        os.unlink(temp)
        raise
    return fd, temp
