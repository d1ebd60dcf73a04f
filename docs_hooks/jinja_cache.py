"""Compile the theme's templates once for all language builds.

mkdocs-static-i18n runs a whole MkDocs build per language, and each build makes a new Jinja
environment for the theme, which compiled Material's templates again (about a quarter of a
translated build's time). This hook gives every build's environment one in-memory bytecode cache:
Jinja compiles each template once and later builds load the compiled code. Jinja checks each
template's source against its checksum, so an edited template (`mkdocs serve`) is compiled anew.
"""

from __future__ import annotations

from typing import Any

from jinja2 import BytecodeCache
from jinja2.bccache import Bucket
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import event_priority


class MemoryBytecodeCache(BytecodeCache):
    """Compiled templates kept in memory for the life of the process."""

    def __init__(self) -> None:
        self._code: dict[str, bytes] = {}

    def load_bytecode(self, bucket: Bucket) -> None:
        """Fill `bucket` from the cache, if it holds this template."""
        code = self._code.get(bucket.key)
        if code is not None:
            bucket.bytecode_from_string(code)

    def dump_bytecode(self, bucket: Bucket) -> None:
        """Keep the bucket's compiled code."""
        self._code[bucket.key] = bucket.bytecode_to_string()

    def clear(self) -> None:
        """Forget every template."""
        self._code.clear()


CACHE = MemoryBytecodeCache()


@event_priority(100)  # before any template is loaded
def on_env(env: Any, config: MkDocsConfig, files: Any) -> Any:
    """Share the bytecode cache with this build's theme environment."""
    env.bytecode_cache = CACHE
    return env
