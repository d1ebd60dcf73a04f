"""Atomic file writes: a reader (or an interrupted run) sees the old file or the new one."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write_text", "remove_file", "sweep_temp_files"]


def atomic_write_text(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file in the same folder and `os.replace`.

    The data is flushed and fsynced before the rename, so after a crash or Ctrl-C the file holds
    either its previous content or the new one, never a part of it, and no temporary file is left
    behind by an exception.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def remove_file(path: Path, *, stop_at: Path) -> None:
    """Delete `path`, then its parent folders up to `stop_at` while they are empty."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    parent = path.parent
    while parent != stop_at and stop_at in parent.parents:
        try:
            parent.rmdir()
        except OSError:
            break
        parent = parent.parent


def sweep_temp_files(folder: Path) -> list[Path]:
    """Remove the temporary files `atomic_write_text` left under `folder` (a killed process).

    Only files named like ours (`.<name>.<random>.tmp`) are removed; returns them.
    """
    if not folder.is_dir():
        return []
    removed = []
    for path in folder.rglob(".*.tmp"):
        if path.is_file():
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            removed.append(path)
    return removed
