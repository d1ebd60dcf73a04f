"""Run scripts/translate_docs.py, pausing right after the first translated page is written.

For the kill test: the page is on disk, the manifest's entry for it is still pending. The
marker file named by `PAUSE_MARKER` appears when the pause starts; the test then kills the
process. Everything else is the real script. The test runs it with `scripts/` on PYTHONPATH.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import translate_docs
from docs_i18n import runner

_write = runner.atomic_write_text


def _write_then_pause(path: Path, text: str) -> None:
    _write(path, text)
    if path.suffix == ".md":
        Path(os.environ["PAUSE_MARKER"]).write_text(str(path), encoding="utf-8")
        time.sleep(3600)


runner.atomic_write_text = _write_then_pause

if __name__ == "__main__":
    sys.exit(translate_docs.main())
