"""The three optional extras: importing their packages, and the one missing-extra message.

`import turnstore` never imports an extra. Whatever needs one (`RedisSession`, a `redis://`
URL given to `open_session_store` or to the `turnstore` command) imports it through
`import_extra`, so a missing extra always reads the same way:
`RedisSession needs the redis extra: pip install 'turnstore[redis]'`.
This module imports nothing of turnstore: every layer may use it.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from types import ModuleType

__all__ = ["EXTRAS", "import_extra", "missing_extra"]

EXTRAS: dict[str, tuple[str, ...]] = {
    "postgres": ("sqlalchemy", "asyncpg"),
    "redis": ("redis",),
    "encryption": ("cryptography",),
}
"""Each extra of `pip install 'turnstore[extra]'` and the top-level packages it installs."""


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
    """
    if extra is not None:
        return ImportError(f"{feature} needs the {extra} extra: pip install 'turnstore[{extra}]'")
    if not packages:
        raise ValueError("missing_extra() needs the extra or the packages to install")
    names = " and ".join([", ".join(packages[:-1]), packages[-1]] if packages[:-1] else packages)
    return ImportError(f"{feature} needs {names}: pip install {' '.join(packages)}")


def import_extra(module: str, extra: str, feature: str) -> ModuleType:
    """Import `module`, which needs `extra`; say what to install when the extra is missing.

    Args:
        module: An absolute module name: a package of the extra (`"redis"`) or a turnstore
            module that imports it (`"turnstore.memory.redis.session"`).
        extra: A key of `EXTRAS`.
        feature: What the user asked for, for the message (`"RedisSession"`).

    Returns:
        The imported module.

    Raises:
        ImportError: A package of `extra` is not installed (the message names the pip command).
            Any other missing module is raised as it is: a broken install, not an extra.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in EXTRAS[extra]:
            raise
        raise missing_extra(feature, extra) from exc
