"""The layers point one way: no import cycle in src/, and memory/ never imports the agent layer.

Every `import` counts, those under `if TYPE_CHECKING:` and inside functions included: a cycle
that only type checkers follow still ties two modules together. So does a module named in a
string (a table of lazy imports): memory/ names no module of the layers above it, and imports
nothing by name at run time (the extras are imported through `turnstore._extras`, which imports
nothing of turnstore). Run this file as a script to
print the graph (`python tests/test_import_graph.py`).
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "turnstore"

# The modules below the agent layer: memory/ may import these and itself, nothing else.
BELOW_THE_AGENT_LAYER = (
    "turnstore._extras",
    "turnstore.items",
    "turnstore.exceptions",
    "turnstore.defaults",
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> list[str]:
    if node.level == 0:
        base = node.module or ""
    else:
        parts = module.split(".")
        keep = len(parts) - node.level + (1 if is_package else 0)
        base = ".".join(parts[:keep] + ([node.module] if node.module else []))
    return [base] + [f"{base}.{alias.name}" for alias in node.names]


def import_graph() -> dict[str, set[str]]:
    """Map each module of the package to the package modules it imports."""
    files = {_module_name(path): path for path in SRC.joinpath(PACKAGE).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = _resolve(module, path.name == "__init__.py", node)
            else:
                continue
            targets.update(name for name in names if name in files and name != module)
        graph[module] = targets
    return graph


def _package_of(module: str, graph: dict[str, set[str]]) -> str | None:
    parent = module.rpartition(".")[0]
    return parent if parent in graph else None


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """Return one import cycle (ignoring a package's own `__init__`), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        stack.append(module)
        for target in sorted(graph[module]):
            # A module importing its enclosing package's __init__ (or the reverse) is how
            # packages re-export: not a cycle between two parts.
            if target.startswith(module + ".") or module.startswith(target + "."):
                continue
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state and (found := visit(target)):
                return found
        stack.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state and (found := visit(module)):
            return found
    return None


def test_the_import_graph_has_no_cycle() -> None:
    assert find_cycle(import_graph()) is None


def test_memory_imports_nothing_from_the_agent_layer() -> None:
    graph = import_graph()
    allowed = ("turnstore.memory", *BELOW_THE_AGENT_LAYER)
    for module, targets in graph.items():
        if not module.startswith("turnstore.memory"):
            continue
        wrong = {t for t in targets if t != "turnstore" and not t.startswith(allowed)}
        assert not wrong, f"{module} imports {sorted(wrong)}"


def named_modules(source: str, modules: set[str]) -> set[str]:
    """The package modules that a string of `source` names (`"turnstore.runner"`).

    Docstrings (a string alone as a statement) are prose, not code: they do not count.
    """
    tree = ast.parse(source)
    prose = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    named: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            for word in re.findall(r"turnstore(?:\.\w+)+", node.value):
                while word and word not in modules:
                    word = word.rpartition(".")[0]
                if word and word != PACKAGE:
                    named.add(word)
    return named


def dynamic_imports(source: str) -> list[str]:
    """The calls of `importlib.import_module` or `__import__` in `source`, as written."""
    return [
        ast.unparse(node)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and ast.unparse(node.func) in {"importlib.import_module", "import_module", "__import__"}
    ]


def _memory_sources() -> dict[str, str]:
    return {
        _module_name(path): path.read_text(encoding="utf-8")
        for path in SRC.joinpath(PACKAGE, "memory").rglob("*.py")
    }


def test_memory_names_no_module_of_the_layers_above_it_in_a_string() -> None:
    modules = set(import_graph())
    allowed = ("turnstore.memory", *BELOW_THE_AGENT_LAYER)
    for module, source in _memory_sources().items():
        wrong = {name for name in named_modules(source, modules) if not name.startswith(allowed)}
        assert not wrong, f"{module} names {sorted(wrong)} in a string"


def test_memory_imports_nothing_by_name_at_run_time() -> None:
    for module, source in _memory_sources().items():
        assert dynamic_imports(source) == [], module


def test_the_extras_module_imports_nothing_of_turnstore() -> None:
    assert import_graph()["turnstore._extras"] == set()


def test_a_lazy_import_table_naming_the_agent_layer_is_found() -> None:
    modules = {"turnstore.runner", "turnstore.agent", "turnstore.memory", "turnstore.testing"}
    table = """LAZY = {"Runner": "turnstore.runner", "ScriptedModel": "turnstore.testing.x"}"""
    assert named_modules(table, modules) == {"turnstore.runner", "turnstore.testing"}
    assert dynamic_imports("importlib.import_module(LAZY[name])") == [
        "importlib.import_module(LAZY[name])"
    ]
    # a string naming memory's own modules, or none, is accepted; so is a docstring's prose
    assert named_modules('x = "turnstore.memory and turnstore"', modules) == {"turnstore.memory"}
    assert named_modules('"""Used by turnstore.runner."""', modules) == set()


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
    assert find_cycle(graph) == ["a", "b", "c", "a"]


if __name__ == "__main__":
    graph = import_graph()
    for module in sorted(graph):
        targets = sorted(t.removeprefix("turnstore.") for t in graph[module])
        print(f"{module.removeprefix('turnstore.') or 'turnstore'} -> {', '.join(targets)}")
    print("cycle:", find_cycle(graph), file=sys.stderr)
