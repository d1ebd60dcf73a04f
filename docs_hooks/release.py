"""The release the site documents: the package version and its tag (not a hook, a helper).

The version is written once, as `__version__` in `src/turnstore/__init__.py`; it is read from
there without importing the package. A release is tagged `v<version>` (docs/contributing.md,
"Releasing"). The API reference's source links point at that tag once CHANGELOG.md dates the
release (`## [0.2.0] - 2026-12-01`), so their line numbers stay right after `main` moves on;
while it says `Unreleased` the tag does not exist yet and they point at `main`. The published
object inventory (`objects.inv`) carries the version.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig

INIT = Path("src") / "turnstore" / "__init__.py"
CHANGELOG = Path("CHANGELOG.md")


def package_version(config: MkDocsConfig) -> str:
    """Return `turnstore.__version__`, read statically from the source next to mkdocs.yml."""
    return _version_in(Path(config.config_file_path or ".").resolve().parent)


@functools.cache
def _version_in(root: Path) -> str:
    tree = ast.parse((root / INIT).read_text(encoding="utf-8"))
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            return node.value.value
    raise LookupError(f'no `__version__ = "..."` in {root / INIT}: the site names the release')


def source_ref(config: MkDocsConfig) -> str:
    """The git ref source links point at: `v<version>` once the changelog dates it, else `main`."""
    root = Path(config.config_file_path or ".").resolve().parent
    version = package_version(config)
    changelog = (root / CHANGELOG).read_text(encoding="utf-8")
    dated = rf"^## \[{re.escape(version)}\] - \d{{4}}-\d{{2}}-\d{{2}}\s*$"
    return f"v{version}" if re.search(dated, changelog, re.M) else "main"
