"""Serve Mermaid with the site instead of loading it from a CDN.

Material for MkDocs renders ```` ```mermaid ```` blocks with a Mermaid script that it loads from a
public CDN unless a global `mermaid` already exists. Where the CDN cannot be reached (offline, a
firewall, a slow network) the diagram stays raw source text, and on that page Material's search
never finishes starting. This hook

1. copies the vendored `vendor/mermaid.min.js` (see `vendor/README.md`) into the built site as
   `assets/javascripts/mermaid.min.js`;
2. on the pages that have a diagram only (the script is large), loads it just before Material's
   own bundle, which then uses it.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.pages import Page

SOURCE = Path(__file__).with_name("vendor") / "mermaid.min.js"
TARGET = "assets/javascripts/mermaid.min.js"
DIAGRAM = re.compile(r'<pre class="mermaid"')
# Material's bundle, e.g. <script src="../assets/javascripts/bundle.1a2b3c4d.min.js"></script>
_BUNDLE = re.compile(
    r'<script src="([^"]*)assets/javascripts/bundle\.[0-9a-f]+\.min\.js"></script>'
)


def load_mermaid(output: str) -> str:
    """Add the local Mermaid script before Material's bundle when the page has a diagram."""
    if not DIAGRAM.search(output):
        return output
    match = _BUNDLE.search(output)
    if match is None:
        raise RuntimeError("Material's bundle script was not found on a page with a diagram")
    script = f'<script src="{match.group(1)}{TARGET}"></script>\n'
    return output[: match.start()] + script + output[match.start() :]


def on_post_page(output: str, page: Page, config: MkDocsConfig) -> str:
    """Diagram pages load the local Mermaid."""
    return load_mermaid(output)


def on_post_build(config: MkDocsConfig) -> None:
    """Copy Mermaid into the site (every language build shares the site's assets)."""
    target = os.path.join(config.site_dir, TARGET)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    shutil.copyfile(SOURCE, target)
