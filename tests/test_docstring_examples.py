"""The code examples in turnstore's docstrings (the API reference shows them): each one parses,
each of its turnstore imports runs, and it imports the `typing` names it uses.

An example is a fenced ```python block inside a module, class, function or attribute docstring
under src/turnstore. Only the import statements run, in a fresh namespace, exactly as written.
"""

from __future__ import annotations

import ast
import re
import textwrap
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src" / "turnstore"
FENCE = re.compile(r"^(?P<indent>[ \t]*)```python\n(?P<code>.*?)^(?P=indent)```", re.M | re.S)


def docstrings(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """Every docstring of a module: its own, its classes' and functions', and attributes'."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for statement in body:
            if (
                isinstance(statement, ast.Expr)
                and isinstance(statement.value, ast.Constant)
                and isinstance(statement.value.value, str)
            ):
                yield statement.lineno, statement.value.value


def examples(path: Path) -> Iterator[tuple[int, str]]:
    """The ```python blocks of a module's docstrings, dedented, with the docstring's line."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for line, text in docstrings(tree):
        for match in FENCE.finditer(text):
            yield line, textwrap.dedent(match["code"])


def turnstore_imports(code: str, where: str) -> list[ast.stmt]:
    tree = compile(code, where, "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    return [
        node
        for node in ast.walk(tree)
        if (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and (node.module or "").split(".")[0] == "turnstore"
        )
        or (
            isinstance(node, ast.Import)
            and any(alias.name.split(".")[0] == "turnstore" for alias in node.names)
        )
    ]


MODULES = sorted(SRC.rglob("*.py"))
EXAMPLES = [
    pytest.param(code, id=f"{path.relative_to(SRC)}:{line}")
    for path in MODULES
    for line, code in examples(path)
]


def test_the_docstrings_hold_examples() -> None:
    # The scan finds what the reference shows: a change to the fence or the walk that found
    # nothing would pass every test below.
    assert len(EXAMPLES) >= 40
    assert any("tool_output_trimmer.py" in str(example.id) for example in EXAMPLES)


@pytest.mark.parametrize("code", EXAMPLES)
def test_each_turnstore_import_of_a_docstring_example_runs(code: str) -> None:
    for node in turnstore_imports(code, "<docstring example>"):
        statement = ast.unparse(node)
        try:
            exec(statement, {})  # the example's own import line
        except ImportError as exc:
            pytest.fail(f"{statement!r} fails: {exc}")


def test_the_check_catches_a_name_turnstore_does_not_export() -> None:
    # The mistake this file guards against: a name imported from the wrong module.
    code = "from turnstore import RunConfig, Runner, ToolOutputTrimmer\n"
    (node,) = turnstore_imports(code, "<example>")
    with pytest.raises(ImportError, match="ToolOutputTrimmer"):
        exec(ast.unparse(node), {})


def unbound_typing_names(code: str) -> set[str]:
    """The names of `typing` an example uses without importing or defining them."""
    tree = compile(code, "<example>", "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    used = {
        node.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
    return (used & set(typing.__all__)) - bound


@pytest.mark.parametrize("code", EXAMPLES)
def test_each_docstring_example_imports_the_typing_names_it_uses(code: str) -> None:
    assert not unbound_typing_names(code), "import them in the example"


def test_the_typing_check_catches_a_missing_import() -> None:
    code = "def f(unit: Literal['C', 'F'] = 'C') -> str:\n    return unit\n"
    assert unbound_typing_names(code) == {"Literal"}
    assert not unbound_typing_names("from typing import Literal\n" + code)
