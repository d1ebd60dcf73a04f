"""The API reference: formatted signatures, standard-library links, source links, objects.inv.

1. The build stops, naming the cause, when neither Black nor Ruff can be imported: mkdocstrings
   would print each signature (`separate_signature: true`) on one line (341 characters on
   ref/backends). The `docs` group installs Black.
2. mkdocstrings links standard-library types (`Mapping`, `Path`) through Python's object
   inventory. The site builds offline, so the Python 3.11 inventory ships beside this file
   (`inventories/python3.11.inv`, from Debian's `python3.11-doc`), handed to the Python handler
   as a `file:` URL whose links point at https://docs.python.org/3/.
3. Each "Source code in `src/...py`" block links to the file in the repository at the lines of
   the object, at the release's tag `v<version>` once CHANGELOG.md dates the release
   (`## [0.2.0] - 2026-12-01`), at `main` while it says `Unreleased` (the tag does not exist).
4. The site's `objects.inv` (read by other projects' intersphinx or mkdocstrings) carries the
   version (`__version__` in src/turnstore/__init__.py, read without importing the package)
   instead of mkdocstrings' "0.0.0", and is the English build's: the translated builds, whose
   reference pages live under `/ja/` etc., do not write one over it.
"""

from __future__ import annotations

import html
import importlib.util
import re
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.pages import Page

PYTHON_INVENTORY = {
    "url": (Path(__file__).with_name("inventories") / "python3.11.inv").resolve().as_uri(),
    "base_url": "https://docs.python.org/3/",
}
_VERSION = re.compile(r'^__version__\s*=\s*"([^"]+)"', re.M)
_SUMMARY = re.compile(r"<summary>Source code in <code>(?P<path>[^<]+)</code></summary>")
_LINE = re.compile(r'codelineno-\d+-(\d+)"')


def _root(config: MkDocsConfig) -> Path:
    return Path(config.config_file_path or ".").resolve().parent


def package_version(config: MkDocsConfig) -> str:
    """`turnstore.__version__`, read from the source next to mkdocs.yml."""
    init = _root(config) / "src" / "turnstore" / "__init__.py"
    match = _VERSION.search(init.read_text(encoding="utf-8"))
    if match is None:
        raise PluginError(f'no `__version__ = "..."` in {init}: the site names the release')
    return match.group(1)


def source_ref(config: MkDocsConfig) -> str:
    """The git ref source links point at: `v<version>` once the changelog dates it, else `main`."""
    version = package_version(config)
    changelog = (_root(config) / "CHANGELOG.md").read_text(encoding="utf-8")
    dated = rf"^## \[{re.escape(version)}\] - \d{{4}}-\d{{2}}-\d{{2}}\s*$"
    return f"v{version}" if re.search(dated, changelog, re.M) else "main"


@event_priority(100)  # before mkdocstrings (0) reads its handlers' configuration
def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Check for a formatter; give the handler the local inventory; objects.inv in English only."""
    if not any(importlib.util.find_spec(name) for name in ("black", "ruff")):
        raise PluginError(
            "The API reference's signatures need Ruff or Black to be formatted "
            "(pip install -e . --group docs installs Black); without them each signature "
            "is one line that scrolls sideways."
        )
    plugin = config.plugins["mkdocstrings"]
    python = plugin.config["handlers"].setdefault("python", {})
    inventories = python.setdefault("inventories", [])
    if PYTHON_INVENTORY not in inventories:
        inventories.append(PYTHON_INVENTORY)
    # The first build runs before mkdocs-static-i18n (on_config -100) has set its language.
    i18n = config.plugins.get("i18n")
    translated = i18n is not None and i18n.current_language not in (None, i18n.default_language)
    plugin.config["enable_inventory"] = False if translated else None
    return config


@event_priority(-10)  # before mkdocstrings (-20) writes objects.inv
def on_env(env: Any, config: MkDocsConfig, files: Any) -> Any:
    """The site's inventory names the package's version."""
    config.plugins["mkdocstrings"].handlers.inventory.version = package_version(config)
    return env


def on_page_content(html_text: str, page: Page, config: MkDocsConfig, **kwargs: Any) -> str:
    """Link every "Source code in" path of an API page to the repository, at the object's lines."""
    repo = (config.repo_url or "").rstrip("/")
    if not repo or "Source code in <code>" not in html_text:
        return html_text
    ref = source_ref(config)

    def link(match: re.Match[str]) -> str:
        end = html_text.find("</td>", match.end())
        lines = _LINE.findall(html_text, match.end(), max(end, match.end()))
        url = f"{repo}/blob/{ref}/{match['path']}"
        if lines:
            url += f"#L{lines[0]}-L{lines[-1]}"
        return (
            f'<summary>Source code in <a href="{html.escape(url)}" class="source-link">'
            f"<code>{match['path']}</code></a></summary>"
        )

    return _SUMMARY.sub(link, html_text)
