"""Refuse to build the API reference with signatures on one line.

mkdocstrings formats each signature (`separate_signature: true`) with Black or Ruff, whichever it
can import, and without either it prints the signature as one line: up to 341 characters on
ref/backends, which scroll sideways at any width. The published site is built with the `docs`
extra alone (.github/workflows/docs.yml), so that extra installs Black (a formatter: `make docs`
installs no linter), and this hook stops the build, naming the cause, when neither formatter can
be imported.
"""

from __future__ import annotations

import importlib

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError

# What mkdocstrings-python imports to format signatures (Black first, then Ruff).
FORMATTERS = ("black", "ruff.__main__")


def formatter_available() -> bool:
    """True when mkdocstrings can format signatures (Black or Ruff can be imported)."""
    for module in FORMATTERS:
        try:
            importlib.import_module(module)
        except ImportError:
            continue
        return True
    return False


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Stop the build when the API signatures would be printed unformatted."""
    if not formatter_available():
        raise PluginError(
            "The API reference's signatures need Ruff or Black to be formatted "
            "(pip install -e . --group docs installs Black); without them each signature "
            "is one line that scrolls sideways."
        )
    return config
