"""The package's shape, checked statically (docs: ARCHITECTURE in the repository's words).

Data walks one way: io -> adapters -> linalg -> engines -> measures -> analysis -> studies/track
-> report -> cli (engines only execute jobs: analysis, studies and the CLI hand them work). Every
import (module level or inside a function: a lazy import is still a dependency) must point to
the same layer or a lower one, the import graph has no cycle, and a module over 500 lines names
its one concept in LONG_MODULES. ``specbound/__init__.py`` (lazy public names) is the one module
allowed to name every layer. Every module is imported or named by a behaviour test.

Each rule is one test that walks its table and fails once, listing every offender; the source
files are parsed once per session (``tests/support/source_index.py``).
"""

from __future__ import annotations

import ast
import functools
import itertools
import re
from pathlib import Path

import pytest

from tests.support import source_index as index
from tests.support.tables import check_each

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
        tree = index.tree(path)
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


MODULES = index.modules()


@functools.cache
def graph() -> dict[str, frozenset[str]]:
    """module -> the specbound modules it imports (parsed once per session)."""
    known = set(MODULES)
    return {m: frozenset(_imports(m, p, known)) for m, p in MODULES.items()}


def test_every_module_has_a_layer() -> None:
    missing = [m for m in MODULES if m and _layer(m) is None]
    assert missing == [], f"modules without a layer in tests/test_layout.py: {missing}"


def test_no_upward_import() -> None:
    bad = []
    for m, deps in graph().items():
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


def test_never_imports() -> None:
    bad = [
        f"{m} imports {d}"
        for package, never in sorted(NEVER_IMPORTS.items())
        for m, deps in graph().items()
        if _within(m, package)
        for d in sorted(deps)
        if any(_within(d, f) for f in never)
    ]
    empty = [p for p in NEVER_IMPORTS if not any(_within(m, p) for m in graph())]
    assert bad == [] and empty == [], "\n".join([*bad, *(f"no module in {p}" for p in empty)])


#: A file name specbound writes -> the one module that names it in code (docstrings may mention
#: it): one mechanism per concern (``io.outdir`` writes every folder's manifest, one schema).
ONE_WRITER: dict[str, str] = {
    ".specbound-manifest.json": "io.outdir",
}


@functools.cache
def _code_strings(path: Path) -> tuple[str, ...]:
    """String constants of the module at ``path`` that are not docstrings."""
    tree = index.tree(path)
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docs.add(id(body[0].value))
    return tuple(
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
    )


def test_one_module_names_each_written_file() -> None:
    bad = []
    for name, writer in sorted(ONE_WRITER.items()):
        naming = sorted(m for m, p in MODULES.items() if any(name in t for t in _code_strings(p)))
        if naming != [writer]:
            bad.append(f"{name} is named in code by {naming}, not only by {writer}")
    assert bad == [], "\n".join(bad)


#: (module, private name it imports from another module) still left, each with its reason; the
#: rule: no module imports another module's private ``_name`` (nor, from outside its package, a
#: package-private ``_module``). Entries are removed as the owners fix them (a stale one fails).
PRIVATE_IMPORTS: dict[tuple[str, str], str] = {}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_imports(
    module: str, path: Path, tree: ast.AST, known: dict[str, Path] | set[str] = MODULES
) -> set[str]:
    """``target._name`` for each private name ``module`` takes from another module
    (``from X import _y``, ``X._y`` on an imported module ``X``) and each package-private module
    ``P._m`` it imports from outside package ``P`` (``known``: the package's modules)."""
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
            if target in known and target != module and outside(target):
                found.add(target)
            for a in node.names:
                full = f"{target}.{a.name}" if target else a.name
                if full in known:
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
            if target and target != module and _private(node.attr) and full not in known:
                found.add(full)
    return found


def test_no_private_name_imported_from_another_module() -> None:
    found = {
        (m, name)
        for m, path in MODULES.items()
        for name in _private_imports(m, path, index.tree(path))
    }
    bad = sorted(f"{m} imports {name}" for m, name in found - set(PRIVATE_IMPORTS))
    assert bad == [], "\n".join(bad)
    stale = sorted(set(PRIVATE_IMPORTS) - found)
    assert stale == [], f"PRIVATE_IMPORTS entries no longer needed: {stale}"


#: (code in module ``p.b``, the private names the scan must find there)
PRIVATE_SCAN_CASES: list[tuple[str, set[str]]] = [
    ("from .a import _x, y", {"p.a._x"}),
    ("from . import a\na._x()", {"p.a._x"}),
    ("import specbound.p.a as a\na._x", {"p.a._x"}),
    ("from ..q import _m", {"q._m"}),
    ("from .a import y\nfrom .b import z", set()),
]


def test_the_private_import_scan_can_fail() -> None:
    known = {"p.a", "p.b", "q._m"}

    def check(case: tuple[str, set[str]]) -> None:
        code, expected = case
        assert _private_imports("p.b", Path("b.py"), ast.parse(code), known) == expected

    check_each(PRIVATE_SCAN_CASES, check, label=lambda c: repr(c[0]))


def test_no_import_cycle() -> None:
    edges = {m: {d for d in deps if d} for m, deps in graph().items() if m}
    # a package's __init__ re-exporting its own submodules is not a cycle of the design
    edges = {
        m: {d for d in deps if not d.startswith(m + ".") and not m.startswith(d + ".")}
        for m, deps in edges.items()
    }
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for d in sorted(edges.get(m, ())):
            if state.get(d) == 1:
                cycles.append([*stack[stack.index(d) :], d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(edges):
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
}


def test_long_module_names_its_concept() -> None:
    long = {m: len(index.lines(p)) for m, p in MODULES.items() if len(index.lines(p)) > 500}
    bad = [
        f"{MODULES[m]} has {n} lines: split it by concern, or list its one concept in LONG_MODULES"
        for m, n in sorted(long.items())
        if m not in LONG_MODULES
    ]
    assert bad == [], "\n".join(bad)


def test_long_modules_are_long() -> None:
    short = [m for m in LONG_MODULES if m in MODULES and len(index.lines(MODULES[m])) <= 500]
    assert short == [], f"LONG_MODULES entries no longer needed: {short}"


def test_no_local_engine_special_case_outside_engines() -> None:
    bad = []
    for m, path in MODULES.items():
        if m.startswith("engines") or m.startswith("cli.options"):
            continue
        for i, line in enumerate(index.lines(path), 1):
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
        for node, in_func, _ in _statements(index.tree(path)):
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
        for node, in_func, in_tc in _statements(index.tree(path)):
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
        for line, name in _dynamic_heavy_imports(index.tree(path))
    ]
    assert bad == [], "\n".join(bad)


def test_the_dynamic_import_scan_can_fail() -> None:
    code = "import importlib\ndef f():\n    return importlib.import_module('torch.func')\n"
    tree = ast.parse(code)
    assert _dynamic_heavy_imports(tree) == [(3, "torch.func")]


# ------------------------------------- every module reached by a behaviour test (issue 51)

#: The convention tests (this file and its kin): they walk every module by rule, so a module
#: they name is not thereby tested for what it does. Paths relative to ``tests/``.
CONVENTION_TESTS: frozenset[str] = frozenset(
    {
        "test_layout.py",
        "test_validation.py",
        "test_validation_apis.py",
        "cli/test_safe_outputs.py",
        "cli/test_conventions.py",
    }
)

#: Modules no behaviour test imports or names, each with how the tests reach it all the same.
#: A stale entry (the module is named by a test now, or is gone) fails.
_DATA_MEASURES = "data measures: track.data_measures runs them (tests/measures/test_data.py)"
REACHED_INDIRECTLY: dict[str, str] = {
    "cli.options": "the flags shared by the commands: every CLI test parses them",
    "io.gguf": "GGUF checkpoints: io.checkpoint.load_checkpoint of a .gguf (tests/io/test_gguf.py)",
    "io.torch_layout": "the .bin zip/legacy layout: io.torch_files.TorchBinFile reads through it "
    "(tests/io/test_torch_bin.py)",
    "measures.data.run": _DATA_MEASURES,
    "measures.data.flatness": _DATA_MEASURES,
    "measures.data.margin": _DATA_MEASURES,
    "measures.data.sharpness": _DATA_MEASURES,
    "report.figures.scale": "a scaling study's figures: studies.scale writes its report with "
    "them (tests/studies/scale/)",
    "studies.answer": "the words of a study's answer: studies.correlate.multizoo.study and its "
    "page (tests/studies/correlate/multizoo/, tests/report/test_study_pages.py)",
    "studies.correlate.rows": "one row of correlation.csv: studies.correlate.correlate "
    "(tests/studies/correlate/test_run.py recomputes the rows by brute force)",
    "studies.trajectory_answer": "the words of a trajectory page: report.pages.trajectory "
    "(tests/report/test_pages.py)",
    "track.callbacks": "SpecboundCallback and the Lightning callback, exported lazily by track "
    "(tests/track/test_tracker.py)",
}

_DOTTED = re.compile(r"\bspecbound((?:\.[A-Za-z_]\w*)+)")


def _resolve(name: str, known: set[str]) -> set[str]:
    """The longest module of ``known`` that the dotted ``name`` (below ``specbound``) refers to,
    with the packages above it (importing a module runs its packages' ``__init__``)."""
    parts = name.split(".") if name else []
    for k in range(len(parts), 0, -1):
        if ".".join(parts[:k]) in known:
            return {".".join(parts[:j]) for j in range(k + 1)}
    return {""}


#: Registries that load modules by name: (registry module, its table of module names, the
#: package those names are in). A test that names the registry reaches every module in its table
#: (it loads them all on first use); a module not in the table is not reached this way.
REGISTRIES: dict[str, tuple[str, str]] = {
    "measures": ("MODULES", "measures"),  # measure_names() / get_measure(name)
    "adapters.registry": ("MODULES", "adapters"),  # get_adapter(checkpoint) by model_type
    "cli": ("COMMANDS", "cli"),  # each command registers itself on cli.app when cli is imported
}


def _top_level_strings(tree: ast.Module, name: str) -> list[str]:
    """The strings of the tuple, list or dict (its values) assigned to ``name`` at the top of
    ``tree``."""
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        value = getattr(node, "value", None)
        if any(isinstance(t, ast.Name) and t.id == name for t in targets) and value is not None:
            items = value.values if isinstance(value, ast.Dict) else getattr(value, "elts", [])
            return [e.value for e in items if isinstance(e, ast.Constant)]
    return []


def _registered() -> dict[str, set[str]]:
    """registry -> the modules its table loads."""
    out = {}
    for registry, (table, package) in REGISTRIES.items():
        names = _top_level_strings(index.tree(MODULES[registry]), table)
        out[registry] = {f"{package}.{n}" for n in names}
    return out


@functools.cache
def _reexports() -> dict[tuple[str, str], str]:
    """(module, name) -> the module that defines ``name``, for each name a module takes from
    another at its top (``from .sub import name``; a test importing it from there uses ``sub``)
    or a package names in a lazy ``{name: "sub"}`` table that its ``__getattr__`` imports from,
    followed through re-exports of re-exports."""
    direct: dict[tuple[str, str], str] = {}
    known = set(MODULES)
    for m, path in MODULES.items():
        parts = m.split(".") if m else []
        pkg = parts if path.name == "__init__.py" else parts[:-1]
        for node in index.tree(path).body:
            if isinstance(node, ast.ImportFrom) and node.level:
                anchor = pkg[: len(pkg) - node.level + 1] if pkg else []
                source = ".".join([*anchor, *(node.module.split(".") if node.module else [])])
                if source in known:
                    for a in node.names:
                        direct[(m, a.asname or a.name)] = source
            value = getattr(node, "value", None)  # a lazy {name: "sub"} table of a package
            if path.name == "__init__.py" and isinstance(value, ast.Dict):
                for k, v in zip(value.keys, value.values, strict=True):
                    if isinstance(k, ast.Constant) and isinstance(v, ast.Constant):
                        source = f"{m}.{str(v.value).lstrip('.')}".lstrip(".")
                        if source in known:
                            direct[(m, str(k.value))] = source
    out = {}
    for key, source in direct.items():
        name, seen = key[1], {key}
        while (source, name) in direct and (source, name) not in seen:
            seen.add((source, name))
            source = direct[(source, name)]
        out[key] = source
    return out


def _named_by(
    tree: ast.AST, known: set[str], reexports: dict[tuple[str, str], str] | None = None
) -> set[str]:
    """specbound modules a test file imports (``import specbound.x``, ``from specbound.x import
    y``, a name ``x`` re-exports from its module ``x.m``) or names in a string
    (``"specbound.x.f"`` for monkeypatch, ``-m specbound.cli``)."""
    reexports = _reexports() if reexports is None else reexports
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module == "specbound" or node.module.startswith("specbound."):
                base = node.module[len("specbound.") :] if "." in node.module else ""
                names = [f"{base}.{a.name}".lstrip(".") for a in node.names]
                names += [
                    reexports[(base, a.name)] for a in node.names if (base, a.name) in reexports
                ]
        elif isinstance(node, ast.Import):
            names = [a.name[len("specbound.") :] for a in node.names if a.name[:10] == "specbound."]
            names += ["" for a in node.names if a.name == "specbound"]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = [m.group(1)[1:] for m in _DOTTED.finditer(node.value)]
        elif isinstance(node, (ast.List, ast.Tuple)):  # [python, "-m", "specbound.cli", ...]
            run = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
            names = [
                f"{b[len('specbound.') :]}.__main__".lstrip(".") if b != "specbound" else "__main__"
                for a, b in itertools.pairwise(run)
                if a == "-m" and isinstance(b, str) and (b + ".").startswith("specbound.")
            ]
            names = [n for n in names if n in known]
        for n in names:
            found |= _resolve(n, known)
    return found


def _behaviour_test_files() -> list[Path]:
    return [
        p
        for p in index.test_files()
        if p.relative_to(index.TESTS).as_posix() not in CONVENTION_TESTS
    ]


def test_every_module_is_named_by_a_behaviour_test() -> None:
    """Each module of ``src/specbound`` is imported or named by a test outside the convention
    tests (or listed in REACHED_INDIRECTLY with its reason), and every listed one still needs
    its entry."""
    known = set(MODULES)
    named: set[str] = set()
    for path in _behaviour_test_files():
        named |= _named_by(index.tree(path), known)
    for registry, loaded in _registered().items():
        assert loaded and loaded <= known, f"{registry}: its table names no module or unknown ones"
        if registry in named:
            named |= loaded
    unnamed = sorted(m for m in known - named if m not in REACHED_INDIRECTLY)
    assert unnamed == [], "no behaviour test imports or names: " + ", ".join(unnamed)
    stale = sorted(m for m in REACHED_INDIRECTLY if m in named or m not in known)
    assert stale == [], f"REACHED_INDIRECTLY entries no longer needed: {stale}"
    assert set(CONVENTION_TESTS) <= {
        p.relative_to(index.TESTS).as_posix() for p in index.test_files()
    }


#: (test code, the modules the reach scan must find there, of a package {a, a.b, a.b.c, d})
REACH_SCAN_CASES: list[tuple[str, set[str]]] = [
    ("from specbound.a.b import c", {"", "a", "a.b", "a.b.c"}),
    ("from specbound.a.b import f", {"", "a", "a.b"}),
    ("from specbound import d", {"", "d"}),
    ("import specbound.a.b as x", {"", "a", "a.b"}),
    ("monkeypatch.setattr('specbound.a.b.c._f', g)", {"", "a", "a.b", "a.b.c"}),
    ("x = 'specbound.d'", {"", "d"}),
    ("from specbound.a import g", {"", "a", "a.b", "a.b.c"}),
    ("run([sys.executable, '-m', 'specbound.d', 'x'])", {"", "d", "d.__main__"}),
    ("run(['-m', 'specbound'])", {"", "__main__"}),
    ("from .a import b\nimport specboundary\nx = 'specbound'", set()),
]


def test_the_reach_scan_can_fail() -> None:
    known = {"", "a", "a.b", "a.b.c", "d", "d.__main__", "__main__"}

    def check(case: tuple[str, set[str]]) -> None:
        code, expected = case
        assert _named_by(ast.parse(code), known, {("a", "g"): "a.b.c"}) == expected

    check_each(REACH_SCAN_CASES, check, label=lambda c: repr(c[0]))
