"""The code in the English guide pages: it parses, imports what exists, and the conformance kit
judges the example session as the page says it does."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest
from site_support import ROOT

import turnstore

DOCS = ROOT / "docs"
PYTHON_BLOCK = re.compile(
    r"^(?P<indent>[ \t]*)```python\n(?P<code>.*?)^(?P=indent)```", re.M | re.S
)


def python_blocks(path: Path) -> list[str]:
    blocks = []
    for match in PYTHON_BLOCK.finditer(path.read_text(encoding="utf-8")):
        indent = match["indent"]
        lines = match["code"].splitlines()
        blocks.append("\n".join(line[len(indent) :] for line in lines))
    return blocks


GUIDE_PAGES = sorted(DOCS.glob("*.md"))


@pytest.mark.parametrize("path", GUIDE_PAGES, ids=lambda p: p.name)
def test_python_examples_parse_and_import_real_names(path: Path) -> None:
    for code in python_blocks(path):
        tree = compile(code, str(path), "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("turnstore"):
                module = importlib.import_module(node.module or "")
                for alias in node.names:
                    assert hasattr(module, alias.name), f"{path.name}: {node.module}.{alias.name}"
                    if node.module == "turnstore":
                        assert alias.name in turnstore.__all__


def test_the_custom_session_sketch_passes_the_whole_conformance_kit(tmp_path: Path) -> None:
    """sessions.md: the DictSession sketch passes every test that applies, as the page says: its
    `add_items` refuses non-dicts, sets, NaN and items nested too deeply with a `TypeError`
    naming the index."""
    assert "The `DictSession` above passes every test that applies to it." in (
        DOCS / "sessions.md"
    ).read_text(encoding="utf-8")
    example = next(c for c in python_blocks(DOCS / "sessions.md") if "class DictSession" in c)
    (tmp_path / "dict_session.py").write_text(example, encoding="utf-8")
    (tmp_path / "test_dict_session.py").write_text(
        "from turnstore.testing import SessionConformanceTests\n"
        "from dict_session import DictSession\n\n\n"
        "class TestDictSession(SessionConformanceTests):\n"
        "    async def make_session(self, session_id):\n"
        "        return DictSession(session_id)\n",
        encoding="utf-8",
    )
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
        "filterwarnings = error\n",
        encoding="utf-8",
    )
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfs"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    passed = re.search(r"(\d+) passed", proc.stdout)
    assert passed, proc.stdout + proc.stderr
    assert int(passed.group(1)) >= 20, proc.stdout
    # Including the deep-nesting ones, which a sketch without its depth check fails.
    assert "failed" not in proc.stdout, proc.stdout
    # The page names what the kit skips: atomic replacement, corrupt rows and `close()`.
    reasons = re.findall(r"^SKIPPED \[\d+\] \S+: (.+)$", proc.stdout, re.M)
    assert reasons, proc.stdout
    for reason in reasons:
        assert re.search(r"AtomicReplacementSession|corrupt_latest_row|no close\(\)", reason), (
            reason
        )
