"""The folders are the floors: agent/ over tools/ over services/, no import runs back up, no module circle.

Every import counts, the ones inside functions too (a lazy import is still a dependency). A failure names
the importing module, the line and the imported module.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FLOORS = {"agent": 3, "tools": 2, "services": 1}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, module: str | None = None) -> list[tuple[int, str]]:
    """(line, absolute module) for every import in the file, relative ones resolved."""
    module = module or _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            out.append((node.lineno, target))
            # `from pkg import mod` may name a submodule: count it as an import of that module too.
            out += [(node.lineno, f"{target}.{alias.name}") for alias in node.names]
    return out


def _graph() -> dict[str, list[tuple[int, str]]]:
    modules = {_module_name(p): p for floor in FLOORS for p in (ROOT / floor).rglob("*.py")}
    graph: dict[str, list[tuple[int, str]]] = {}
    for name, path in modules.items():
        edges = []
        for line, target in _imports(path):
            if target in modules and target != name:
                edges.append((line, target))
        graph[name] = edges
    return graph


def _floor(module: str) -> int:
    return FLOORS[module.split(".")[0]]


def test_no_import_runs_up_a_floor() -> None:
    graph = _graph()
    upward = [
        f"{src} (line {line}) imports {dst}: floor {_floor(src)} -> {_floor(dst)}"
        for src, edges in graph.items()
        for line, dst in edges
        if _floor(dst) > _floor(src)
    ]
    assert len(graph) > 50, "the walk found too few modules: the test would prove nothing"
    assert upward == []


def test_no_module_imports_itself_through_a_circle() -> None:
    graph = {src: {dst for _, dst in edges if not src.startswith(dst + ".")} for src, edges in _graph().items()}
    # Tarjan's strongly connected components; a component of two or more modules is a circle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert circles == []


def test_the_walk_sees_lazy_and_relative_imports(tmp_path: Path) -> None:
    # The checker itself: an import inside a function and a relative import are both found.
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from agent.loop.query import query\nfrom . import messages\n")
    found = [t for _, t in _imports(probe, "services.probe")]
    assert "agent.loop.query" in found and "services.messages" in found
