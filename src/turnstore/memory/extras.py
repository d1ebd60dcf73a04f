"""Public names imported on first use: the one table of them, and the one missing-extra wording.

`turnstore`, `turnstore.memory`, `turnstore.items`, `turnstore.extensions.memory` and
`turnstore.testing` list these names in their static `__all__`, import them under
`if TYPE_CHECKING:` (so type checkers see the real classes) and import them on first use (their
module `__getattr__` is `lazy_getattr`'s). Two kinds of name are listed:

- names that need an extra (or pytest): `import turnstore` works without it, and whatever asks
  for a missing extra, the API (`from turnstore import RedisSession`), the stores or the
  `turnstore` command, says it the same way:
  `RedisSession needs the redis extra: pip install 'turnstore[redis]'`;
- names whose modules import the `openai` package (the agent layer, the OpenAI-backed sessions,
  `TResponseInputItem`): `openai` is installed with turnstore, but importing it costs most of
  the import time, so an application that only stores sessions, and the `turnstore` command,
  never import it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection, Sequence
from typing import Any, NamedTuple

__all__ = ["LAZY_EXPORTS", "LazyExport", "lazy_getattr", "load_lazy_export", "missing_extra"]


class LazyExport(NamedTuple):
    """Where a lazily imported public name is defined, and what it needs installed, if anything."""

    module: str
    """The module that defines the name (absolute)."""
    extra: str | None = None
    """The pip extra that brings its packages, if it has one."""
    packages: tuple[str, ...] = ()
    """Otherwise, the packages to install (for example pytest for the conformance suite)."""
    attribute: str | None = None
    """The name in `module`, when it is not the exported name (an alias of another package's)."""


_RESULT = "turnstore.result"
_RUN_CONFIG = "turnstore.run_config"
_STREAM_EVENTS = "turnstore.stream_events"
_MODELS = "turnstore.models"
_COMPACTION = "turnstore.memory.openai.compaction"

LAZY_EXPORTS: dict[str, LazyExport] = {
    # turnstore and turnstore.memory (and turnstore.extensions.memory): need an extra
    "EncryptedSession": LazyExport("turnstore.memory.encrypted", extra="encryption"),
    "RedisSession": LazyExport("turnstore.memory.redis.session", extra="redis"),
    "SQLAlchemySession": LazyExport("turnstore.memory.sqlalchemy.session", extra="postgres"),
    # turnstore and turnstore.memory: import openai
    "CompactionTriggerContext": LazyExport(_COMPACTION),
    "OpenAIResponsesCompactionSession": LazyExport(_COMPACTION),
    "OpenAIConversationsSession": LazyExport("turnstore.memory.openai.conversations"),
    # turnstore and turnstore.items: the openai package's own type
    "TResponseInputItem": LazyExport("openai.types.responses", attribute="ResponseInputItemParam"),
    # turnstore: the agent layer, which imports openai
    "Agent": LazyExport("turnstore.agent"),
    "Runner": LazyExport("turnstore.runner"),
    "RunConfig": LazyExport(_RUN_CONFIG),
    "CallModelData": LazyExport(_RUN_CONFIG),
    "CallModelInputFilter": LazyExport(_RUN_CONFIG),
    "ModelInputData": LazyExport(_RUN_CONFIG),
    "RunResult": LazyExport(_RESULT),
    "RunResultStreaming": LazyExport(_RESULT),
    "RunCompleteEvent": LazyExport(_RESULT),
    "StreamEvent": LazyExport(_RESULT),
    "Usage": LazyExport(_RESULT),
    "RawResponseEvent": LazyExport(_STREAM_EVENTS),
    "RunItemEvent": LazyExport(_STREAM_EVENTS),
    "TextDeltaEvent": LazyExport(_STREAM_EVENTS),
    "Model": LazyExport(_MODELS),
    "ModelRequest": LazyExport(_MODELS),
    "ModelSettings": LazyExport(_MODELS),
    "OpenAIResponsesModel": LazyExport(_MODELS),
    "FunctionTool": LazyExport("turnstore.tools"),
    "function_tool": LazyExport("turnstore.tools"),
    "SessionInputCallback": LazyExport("turnstore.session_input"),
    "ToolOutputTrimmer": LazyExport("turnstore.extensions"),
    # turnstore.testing (the scripted model imports openai; the fake server does not)
    "ScriptedModel": LazyExport("turnstore.testing.scripted_model"),
    "ScriptStep": LazyExport("turnstore.testing.scripted_model"),
    "SessionConformanceTests": LazyExport(
        "turnstore.testing.conformance", packages=("pytest", "pytest-asyncio")
    ),
}
"""Every public name imported on first use: name -> where it lives and what it needs, if anything.

A name listed here is in the static `__all__` of the packages that export it, imported under
`if TYPE_CHECKING:` there, and resolved by their `__getattr__`. A name with neither `extra` nor
`packages` needs nothing beyond turnstore's own dependencies: it is listed to keep `openai` out
of `import turnstore`, and a failure to import it is raised as it is.
"""


def missing_extra(
    feature: str, extra: str | None = None, *, packages: Sequence[str] = ()
) -> ImportError:
    """Return the error that says what `feature` needs installed and how to install it.

    Args:
        feature: What the user asked for, as they would name it (`"RedisSession"`,
            `"a redis:// URL"`).
        extra: The pip extra that brings its packages (`"redis"`, `"postgres"`, `"encryption"`).
        packages: Instead of an extra, the packages to install (`("pytest", "pytest-asyncio")`).

    Returns:
        The error to raise (chain the original `ImportError` to it).

    Raises:
        ValueError: Neither `extra` nor `packages` was given.

    Example:
        ```python
        try:
            import redis
        except ImportError as exc:
            raise missing_extra("RedisSession", "redis") from exc
        ```
    """
    if extra is not None:
        return ImportError(f"{feature} needs the {extra} extra: pip install 'turnstore[{extra}]'")
    if not packages:
        raise ValueError("missing_extra() needs the extra or the packages to install")
    names = " and ".join([", ".join(packages[:-1]), packages[-1]] if packages[:-1] else packages)
    return ImportError(f"{feature} needs {names}: pip install {' '.join(packages)}")


def load_lazy_export(name: str) -> Any:
    """Import a name of `LAZY_EXPORTS` from its module.

    Args:
        name: A key of `LAZY_EXPORTS`.

    Returns:
        The object the name stands for.

    Raises:
        ImportError: What the name needs is not installed (the message says what to install),
            or, for a name that needs no extra, the import failed (a broken install).
    """
    export = LAZY_EXPORTS[name]
    try:
        module = importlib.import_module(export.module)
    except ModuleNotFoundError as exc:
        if export.extra is None and not export.packages:
            raise  # a dependency of turnstore itself (openai) is missing: a broken install
        if (exc.name or "").partition(".")[0] == "turnstore":
            raise  # a module of this package is missing: a broken install, not an extra
        raise missing_extra(name, export.extra, packages=export.packages) from exc
    return getattr(module, export.attribute or name)


def lazy_getattr(
    module: str, exported: Collection[str], *, moved: tuple[str, Collection[str]] | None = None
) -> Callable[[str], Any]:
    """Return the module `__getattr__` of a package whose `__all__` holds names of `LAZY_EXPORTS`.

    The package's `__all__` stays static; such a name is imported on first use, and raises the
    `ImportError` of `missing_extra` when the extra it needs is not installed.

    Args:
        module: The package's `__name__` (for the error messages).
        exported: The package's `__all__`.
        moved: A package and the names exported from it only: asking this one for such a name
            raises an `AttributeError` that says where to import it from.

    Returns:
        The function to bind as the package's `__getattr__` (under `if not TYPE_CHECKING:`, so that
        type checkers keep flagging unknown names).
    """

    def __getattr__(name: str) -> Any:
        if name in LAZY_EXPORTS and name in exported:
            return load_lazy_export(name)  # not cached: sys.modules already is
        if moved is not None and name in moved[1]:
            raise AttributeError(
                f"module {module!r} has no attribute {name!r}: the tools for writing a session "
                f"backend are in {moved[0]} (from {moved[0]} import {name})"
            )
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
