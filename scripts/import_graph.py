"""The import graph of one package of this project, as text: each module with the modules of the
package it imports, then the cycles (modules that import each other in a loop).

    python scripts/import_graph.py app            # this checkout
    python scripts/import_graph.py app --root DIR # another checkout (e.g. a worktree of main)

Read from the source with ``ast`` (nothing is imported): every import counts, also one written
inside a function or under ``if TYPE_CHECKING:`` (marked ``(in a function)`` / ``(typing)``),
since such an import still ties the two modules together. ``from pkg import name`` counts as an
import of ``pkg.name`` when that is a module. The contracts that keep the graph in order are in
``.importlinter`` (``lint-imports``, run by tests/unit/test_layers.py).
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path


def module_names(root: Path, package: str) -> dict[str, Path]:
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> dict[str, str]:
    """{imported module of the package: "" | "in a function" | "typing"}."""
    tree = ast.parse(path.read_text(), str(path))
    typing_lines = _type_checking_lines(tree)
    nested = {
        node.lineno
        for func in ast.walk(tree)
        if isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef)
        for node in ast.walk(func)
        if isinstance(node, ast.Import | ast.ImportFrom)
    }
    is_package = path.name == "__init__.py"
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        how = "typing" if node.lineno in typing_lines else "in a function" if node.lineno in nested else ""
        for target in targets:
            while target and target not in modules:  # `import app.x.y` names the module app.x.y
                target = target.rpartition(".")[0]
            if target and target != name and (target not in found or found[target] and not how):
                found[target] = how
    return found


def cycles(graph: dict[str, dict[str, str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
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
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("package")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    args = parser.parse_args()
    modules = module_names(args.root, args.package)
    graph = {name: imports_of(name, path, modules) for name, path in modules.items()}
    for name in sorted(graph):
        targets = [f"{t} ({how})" if how else t for t, how in sorted(graph[name].items())]
        print(f"{name} -> {', '.join(targets) if targets else f'(nothing of {args.package})'}")
    found = cycles(graph)
    print(f"\ncycles: {len(found)}")
    for component in found:
        print(f"  {len(component)} modules: {', '.join(component)}")


if __name__ == "__main__":
    main()
