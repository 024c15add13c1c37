"""The package's shape, checked statically (docs: ARCHITECTURE in the repository's words).

Data walks one way: io -> adapters -> linalg -> measures -> analysis -> engines -> studies/track ->
report -> cli. Every import (module level or inside a function: a lazy import is still a
dependency) must point to the same layer or a lower one, the import graph has no cycle, and no
module is over 500 lines. ``specbound/__init__.py`` (lazy public names) is the one module allowed
to name every layer.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "specbound"

#: first dotted component(s) -> layer; a longer prefix wins.
LAYERS: dict[str, int] = {
    "_version": 0,
    "errors": 0,
    "validation": 0,
    "config": 0,
    "core": 0,
    "activations": 0,
    "naming": 0,
    "io": 1,
    "demo": 1,
    "adapters": 2,
    "linalg": 3,
    "measures": 4,
    "analysis": 5,
    "tables": 5,
    "layerwise": 5,
    "inspection": 5,
    "engines": 6,
    "studies": 7,
    "track": 7,
    "report": 8,
    "cli": 9,
    "__main__": 9,
}


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _layer(module: str) -> int | None:
    parts = module.split(".")
    for k in range(len(parts), 0, -1):
        key = ".".join(parts[:k])
        if key in LAYERS:
            return LAYERS[key]
    return None


def _imports(module: str, path: Path, known: set[str]) -> set[str]:
    """specbound modules imported by ``module`` (relative and absolute forms)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    base = module.split(".") if module else []
    pkg = base if is_pkg else base[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = pkg[: len(pkg) - (node.level - 1)] if node.level > 1 else pkg
                target = [*anchor, *(node.module.split(".") if node.module else [])]
            elif node.module and node.module.split(".")[0] == "specbound":
                target = node.module.split(".")[1:]
            else:
                continue
            names.append(".".join(target))
            names.extend(".".join([*target, a.name]) for a in node.names)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "specbound":
                    names.append(".".join(a.name.split(".")[1:]))
        for n in names:
            # the longest known module that the name refers to
            parts = n.split(".") if n else []
            for k in range(len(parts), 0, -1):
                cand = ".".join(parts[:k])
                if cand in known:
                    if cand != module:
                        found.add(cand)
                    break
    return found


MODULES = _modules()
GRAPH = {m: _imports(m, p, set(MODULES)) for m, p in MODULES.items()}


def test_every_module_has_a_layer() -> None:
    missing = [m for m in MODULES if m and _layer(m) is None]
    assert missing == [], f"modules without a layer in tests/test_layout.py: {missing}"


def test_no_upward_import() -> None:
    bad = []
    for m, deps in GRAPH.items():
        if not m:  # specbound/__init__.py: lazy public names of every layer
            continue
        lm = _layer(m)
        for d in deps:
            ld = _layer(d)
            if lm is not None and ld is not None and ld > lm:
                bad.append(f"{m} (layer {lm}) imports {d} (layer {ld})")
    assert bad == [], "\n".join(sorted(bad))


def test_no_import_cycle() -> None:
    graph = {m: {d for d in deps if d} for m, deps in GRAPH.items() if m}
    # a package's __init__ re-exporting its own submodules is not a cycle of the design
    graph = {
        m: {d for d in deps if not d.startswith(m + ".") and not m.startswith(d + ".")}
        for m, deps in graph.items()
    }
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                cycles.append([*stack[stack.index(d) :], d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert cycles == [], "\n".join(" -> ".join(c) for c in cycles)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_under_500_lines(module: str) -> None:
    n = len(MODULES[module].read_text(encoding="utf-8").splitlines())
    assert n <= 500, f"{MODULES[module]} has {n} lines"


def test_no_local_engine_special_case_outside_engines() -> None:
    bad = []
    for m, path in MODULES.items():
        if m.startswith("engines") or m.startswith("cli.options"):
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#")[0]
            if '== "local"' in code or '!= "local"' in code or "== 'local'" in code:
                bad.append(f"{path}:{i}: {line.strip()}")
    assert bad == [], "\n".join(bad)


def test_old_module_paths_are_gone() -> None:
    """The 0.x redirector (``_moved``) is gone since 0.1.0: an old path is an ImportError."""
    import importlib

    for old in ("specbound.study", "specbound.bounds", "specbound.hub"):
        with pytest.raises(ImportError):
            importlib.import_module(old)
