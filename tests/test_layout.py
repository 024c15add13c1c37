"""The package's shape, checked statically (docs: ARCHITECTURE in the repository's words).

Data walks one way: io -> adapters -> linalg -> engines -> measures -> analysis -> studies/track
-> report -> cli (engines only execute jobs: analysis, studies and the CLI hand them work). Every
import (module level or inside a function: a lazy import is still a dependency) must point to
the same layer or a lower one, the import graph has no cycle, and no module is over 500 lines.
``specbound/__init__.py`` (lazy public names) is the one module allowed to name every layer.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "specbound"

#: first dotted component(s) -> layer; a longer prefix wins.
LAYERS: dict[str, float] = {
    "_version": 0,
    "errors": 0,
    "extras": 0,
    "validation": 0,
    "config": 0,
    "core": 0,
    "activations": 0,
    "naming": 0,
    "io": 1,
    "demo": 1,
    "adapters": 2,
    "linalg": 3,
    "engines": 3.5,  # executors only: below what they are handed (see NEVER_IMPORTS)
    "measures": 4,
    "analysis": 5,
    "tables": 5,
    "layerwise": 5,
    "inspection": 5,
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


def _layer(module: str) -> float | None:
    parts = module.split(".")
    for k in range(len(parts), 0, -1):
        key = ".".join(parts[:k])
        if key in LAYERS:
            return LAYERS[key]
    return None


def _imports(module: str, path: Path, known: set[str], tree: ast.AST | None = None) -> set[str]:
    """specbound modules imported by ``module`` (relative and absolute forms), in ``tree`` (one
    statement) or the whole file."""
    if tree is None:
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


#: package -> packages it never imports (beyond the layers' order: a rule of the design). The
#: engines execute jobs and know nothing of checkpoints or analyses: the sweep, its resume
#: records, the block split and per-job memory live in ``analysis``.
NEVER_IMPORTS: dict[str, tuple[str, ...]] = {
    "engines": ("analysis", "adapters", "io", "measures"),
}


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


@pytest.mark.parametrize("package", sorted(NEVER_IMPORTS))
def test_never_imports(package: str) -> None:
    bad = [
        f"{m} imports {d}"
        for m, deps in GRAPH.items()
        if _within(m, package)
        for d in deps
        if any(_within(d, f) for f in NEVER_IMPORTS[package])
    ]
    assert bad == [], "\n".join(sorted(bad))
    assert any(_within(m, package) for m in GRAPH), f"no module in {package}"


#: A file name specbound writes -> the one module that names it in code (docstrings may mention
#: it): one mechanism per concern (``io.outdir`` writes every folder's manifest, one schema).
ONE_WRITER: dict[str, str] = {
    ".specbound-manifest.json": "io.outdir",
}


def _code_strings(tree: ast.AST) -> list[str]:
    """String constants of ``tree`` that are not docstrings."""
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docs.add(id(body[0].value))
    return [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
    ]


@pytest.mark.parametrize("name", sorted(ONE_WRITER))
def test_one_module_names_each_written_file(name: str) -> None:
    naming = sorted(
        m
        for m, path in MODULES.items()
        if any(name in text for text in _code_strings(ast.parse(path.read_text("utf-8"))))
    )
    assert naming == [ONE_WRITER[name]]


#: (module, private name it imports from another module) still left, each with its reason; the
#: rule: no module imports another module's private ``_name`` (nor, from outside its package, a
#: package-private ``_module``). Entries are removed as the owners fix them (a stale one fails).
PRIVATE_IMPORTS: dict[tuple[str, str], str] = {}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_imports(module: str, path: Path, tree: ast.AST) -> set[str]:
    """``target._name`` for each private name ``module`` takes from another module
    (``from X import _y``, ``X._y`` on an imported module ``X``) and each package-private module
    ``P._m`` it imports from outside package ``P``."""
    is_pkg = path.name == "__init__.py"
    base = module.split(".") if module else []
    pkg = base if is_pkg else base[:-1]
    found: set[str] = set()
    aliases: dict[str, str] = {}

    def outside(target: str) -> bool:  # a private module imported from outside its package
        parent = target.rsplit(".", 1)[0] if "." in target else ""
        top = not parent  # specbound's own (``_version``): every module is inside it
        return _private(target.rsplit(".", 1)[-1]) and not top and not _within(module, parent)

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = pkg[: len(pkg) - (node.level - 1)] if node.level > 1 else pkg
                target = ".".join([*anchor, *(node.module.split(".") if node.module else [])])
            elif node.module and node.module.split(".")[0] == "specbound":
                target = ".".join(node.module.split(".")[1:])
            else:
                continue
            if target in MODULES and target != module and outside(target):
                found.add(target)
            for a in node.names:
                full = f"{target}.{a.name}" if target else a.name
                if full in MODULES:
                    aliases[a.asname or a.name] = full
                    if outside(full):
                        found.add(full)
                elif _private(a.name) and target != module:
                    found.add(full)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("specbound."):
                    aliases[a.asname or a.name] = a.name[len("specbound.") :]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            target = aliases.get(node.value.id)
            full = f"{target}.{node.attr}"
            if target and target != module and _private(node.attr) and full not in MODULES:
                found.add(full)
    return found


def test_no_private_name_imported_from_another_module() -> None:
    found = {
        (m, name)
        for m, path in MODULES.items()
        for name in _private_imports(m, path, ast.parse(path.read_text(encoding="utf-8")))
    }
    bad = sorted(f"{m} imports {name}" for m, name in found - set(PRIVATE_IMPORTS))
    assert bad == [], "\n".join(bad)
    stale = sorted(set(PRIVATE_IMPORTS) - found)
    assert stale == [], f"PRIVATE_IMPORTS entries no longer needed: {stale}"


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("from .a import _x, y", {"p.a._x"}),
        ("from . import a\na._x()", {"p.a._x"}),
        ("import specbound.p.a as a\na._x", {"p.a._x"}),
        ("from ..q import _m", {"q._m"}),
        ("from .a import y\nfrom .b import z", set()),
    ],
)
def test_the_private_import_scan_can_fail(code: str, expected: set[str]) -> None:
    saved = dict(MODULES)
    MODULES.update({"p.a": Path("a.py"), "q._m": Path("_m.py")})
    try:
        assert _private_imports("p.b", Path("b.py"), ast.parse(code)) == expected
    finally:
        MODULES.clear()
        MODULES.update(saved)


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


#: Modules are cut by concept, not by size (issue 51): a module past 500 lines is listed here
#: with the one concept it holds, so growing one is a decision, never a reason to split a
#: concept or re-export names to stay under a cap.
LONG_MODULES: dict[str, str] = {
    "io.files": "file guards and the one atomic file writer (JSON, CSV, text)",
    "io.outdir": "the one output folder: its checks, manifest, owner-marked temps and swap",
    "studies.protocol.stats": "the protocol's statistics (Kendall, Jiang, Psi, sign-error)",
    "studies.multizoo": "the multi-zoo study: family, independence, replicates, answer",
}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_long_module_names_its_concept(module: str) -> None:
    n = len(MODULES[module].read_text(encoding="utf-8").splitlines())
    assert n <= 500 or module in LONG_MODULES, (
        f"{MODULES[module]} has {n} lines: split it by concern, or list its one concept in "
        "LONG_MODULES"
    )


def test_long_modules_are_long() -> None:
    short = [
        m
        for m in LONG_MODULES
        if m in MODULES and len(MODULES[m].read_text(encoding="utf-8").splitlines()) <= 500
    ]
    assert short == [], f"LONG_MODULES entries no longer needed: {short}"


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


# ------------------------------------------- imports you can see (issue 44, item 6)

#: Imports of specbound's own modules that stay inside a function, each with its reason. Every
#: other one sits at the top of its module, so that the import graph above is the one Python
#: walks. ``cli.*`` modules may also import any layer from io up inside a command's body (a rule,
#: not a list; see :func:`_lazy_allowed`).
LAZY_OWN: dict[tuple[str, str], str] = {
    ("engines", "engines.ray"): "start-up: engines/__init__ is on the CLI's start path, Ray's "
    "options pull numpy and the block runner",
}

#: Where each heavy optional package is imported (outside ``if TYPE_CHECKING:``): one place,
#: ``specbound.extras``, inside a function; every other module calls into it
#: (``torch = extras.torch()``).
HEAVY_PLACES: dict[str, set[str]] = {
    "ray": {"extras"},
    "matplotlib": {"extras"},
    "torch": {"extras"},
    "transformers": {"extras"},
}


def _statements(tree: ast.AST) -> list[tuple[ast.stmt, bool, bool]]:
    """Every import statement with (in a function body, under ``if TYPE_CHECKING:``)."""
    out: list[tuple[ast.stmt, bool, bool]] = []

    def walk(node: ast.AST, in_func: bool, in_tc: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                out.append((child, in_func, in_tc))
            func = in_func or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            tc = in_tc or (isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test))
            walk(child, func, tc)

    walk(tree, False, False)
    return out


def _lazy_allowed(module: str, target: str) -> bool:
    if (module, target) in LAZY_OWN:
        return True
    lt = _layer(target)
    return module.split(".")[0] == "cli" and lt is not None and lt >= 1


def _function_level_own_imports() -> list[tuple[str, int, str]]:
    """(module, line, imported module) for each own import inside a function body."""
    found = []
    for m, path in MODULES.items():
        for node, in_func, _ in _statements(ast.parse(path.read_text(encoding="utf-8"))):
            if in_func:
                targets = _imports(m, path, set(MODULES), node)
                found.extend((m, node.lineno, t) for t in sorted(targets))
    return found


def test_own_imports_at_module_top() -> None:
    """specbound's own modules are imported at the top of each module (the import graph is the
    one the layers above check), apart from the reasoned exceptions in LAZY_OWN and the CLI's
    command bodies; and every LAZY_OWN entry is still needed."""
    found = _function_level_own_imports()
    bad = [
        f"{m}:{line} imports {t} inside a function"
        for m, line, t in found
        if not _lazy_allowed(m, t)
    ]
    assert bad == [], "\n".join(bad)
    used = {(m, t) for m, _, t in found}
    stale = sorted(set(LAZY_OWN) - used)
    assert stale == [], f"LAZY_OWN entries no longer needed: {stale}"


def test_heavy_packages_imported_lazily_in_their_places() -> None:
    """torch, transformers, matplotlib and Ray: never at a module's top (outside TYPE_CHECKING),
    and only in the modules HEAVY_PLACES names."""
    places: dict[str, set[str]] = {k: set() for k in HEAVY_PLACES}
    top = []
    for m, path in MODULES.items():
        for node, in_func, in_tc in _statements(ast.parse(path.read_text(encoding="utf-8"))):
            if in_tc:
                continue
            if isinstance(node, ast.Import):
                roots = [a.name.split(".")[0] for a in node.names]
            else:
                roots = [] if node.level or not node.module else [node.module.split(".")[0]]
            for r in roots:
                if r in places:
                    places[r].add(m)
                    if not in_func:
                        top.append(f"{m}:{node.lineno} imports {r} at module level")
    assert top == [], "\n".join(top)
    assert places == HEAVY_PLACES


def _dynamic_heavy_imports(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, name) of each ``import_module("<heavy>...")`` / ``__import__("<heavy>...")`` with
    a literal name: an import the statement scan above would not see."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            f = node.func
            fname = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            a = node.args[0]
            if (
                fname in ("import_module", "__import__")
                and isinstance(a, ast.Constant)
                and isinstance(a.value, str)
                and a.value.split(".")[0] in HEAVY_PLACES
            ):
                found.append((node.lineno, a.value))
    return found


def test_heavy_packages_have_one_place_extras() -> None:
    """Each heavy package is imported in one module, ``extras``, which has a function for each
    (and only those); no other module reaches one through ``importlib`` with a literal name."""
    from specbound import extras

    assert all(places == {"extras"} for places in HEAVY_PLACES.values())
    assert set(extras.PACKAGES) == set(HEAVY_PLACES)
    assert all(callable(getattr(extras, name)) for name in HEAVY_PLACES)
    bad = [
        f"{m}:{line} imports {name} through importlib"
        for m, path in MODULES.items()
        if m != "extras"
        for line, name in _dynamic_heavy_imports(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert bad == [], "\n".join(bad)


def test_the_dynamic_import_scan_can_fail() -> None:
    code = "import importlib\ndef f():\n    return importlib.import_module('torch.func')\n"
    tree = ast.parse(code)
    assert _dynamic_heavy_imports(tree) == [(3, "torch.func")]
