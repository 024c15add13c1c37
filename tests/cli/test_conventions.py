"""The command line's conventions (issue 22) and its terminal output (issue 21), through the one
CLI runner: --version/-h, python -m specbound, flags without <bool>, defaults shown, --json on
every command that prints a result (strict JSON), shell completion, library errors named by
their flags, the correlation table at 80 columns, the answer first in analyze's summary."""

from __future__ import annotations

import json
import math
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from specbound._version import __version__
from tests.support.checkpoints import write_tiny_bert
from tests.support.cli_runner import run_cli, run_cli_process
from tests.support.tables import check_each

#: Every command path and whether it prints a result (then it has --json).
COMMANDS: list[tuple[list[str], bool]] = [
    ([], False),
    (["analyze"], True),
    (["layers"], True),
    (["measures"], True),
    (["inspect"], True),
    (["scale"], True),
    (["reproduce"], True),
    (["trajectory"], True),
    (["correlate"], True),
    (["version"], False),
    (["cache"], False),
    (["cache", "info"], True),
    (["cache", "clear"], True),
    (["zoo"], False),
    (["zoo", "train"], True),
]
WIDE = {"COLUMNS": "250"}


def strict_json(text: str) -> object:
    """Parse ``text`` as RFC 8259 JSON: NaN, Infinity and -Infinity are refused."""

    def refuse(name: str) -> None:
        raise AssertionError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


# ------------------------------------------------------------------------------ conventions


def test_version_flag_short_flag_and_subcommand() -> None:
    for args in (["--version"], ["-V"], ["version"]):
        r = run_cli(*args)
        assert (r.code, r.out.strip(), r.err) == (0, __version__, ""), args


def test_python_m_specbound_prints_the_version() -> None:
    r = run_cli_process("--version", timeout=120)
    assert r.code == 0, r.err
    assert r.out.strip() == __version__


def test_help_conventions() -> None:
    def check(case: tuple[list[str], bool]) -> None:
        path, prints = case
        short, long = run_cli(*path, "-h", env=WIDE), run_cli(*path, "--help", env=WIDE)
        assert short.code == 0 and long.code == 0, short.err + long.err
        assert short.out == long.out and "Usage: specbound" in short.out
        assert "<bool>" not in short.out  # boolean flags take no value
        assert ("--json" in short.out) == prints

    check_each(COMMANDS, check, label=lambda c: " ".join(c[0]) or "app")


def test_defaults_are_shown() -> None:
    text = run_cli("correlate", "-h", env=WIDE).out
    assert "[default: 1000]" in text and "[default: 0]" in text and "[default: local]" in text
    text = run_cli("analyze", "-h", env=WIDE).out
    assert "ceil(L + ln max(N, 2))" in text and "[default: (numpy)]" in text
    assert "[default: (from config.json" in text


def test_analyze_help_has_the_column_glossary() -> None:
    text = run_cli("analyze", "-h", env=WIDE).out
    for term in ("p*", "grid m", "L_phi", "depth_factor", "xi", "ceiling"):
        assert f"  {term} " in text, term
    assert "not bounds on the test error" in text


def test_shell_completion() -> None:
    assert "--install-completion" in run_cli("-h", env=WIDE).out
    # typer reads the shell from $SHELL, not from the process tree (which holds no shell when
    # pytest is started by another program)
    r = run_cli(
        "--show-completion",
        "bash",
        env={"SHELL": "/bin/bash", "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"},
    )
    assert r.code == 0 and "_SPECBOUND_COMPLETE" in r.out


def test_boolean_flags_take_no_value(tmp_path: Path) -> None:
    r = run_cli("measures", "--json", "true")
    assert r.code == 2
    r.one_error_line()


# ------------------------------------------------------------------------------ --json


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_bert(tmp_path_factory.mktemp("cli") / "m")


def test_measures_json() -> None:
    from specbound.measures import get_measure, measure_names

    r = run_cli("measures", "--json")
    assert r.code == 0, r.err
    rows = strict_json(r.out)
    assert [x["name"] for x in rows] == measure_names()
    assert all(x["description"] == get_measure(x["name"]).description for x in rows)


def test_analyze_and_inspect_json(tiny: Path, tmp_path: Path) -> None:
    r = run_cli("analyze", tiny, "--json", "--no-cache")
    assert r.code == 0, r.err
    s = strict_json(r.out)
    assert s["num_layers"] == 2 and s["bounds"]["spectrum_adaptive"]["value"] > 0
    r = run_cli("inspect", tiny, "--json")
    assert r.code == 0, r.err
    assert isinstance(strict_json(r.out), dict)


def test_cache_json(tiny: Path, tmp_path: Path) -> None:
    env = {"SPECBOUND_CACHE_DIR": str(tmp_path / "cache")}
    assert run_cli("analyze", tiny, "-q", env=env).code == 0
    info = strict_json(run_cli("cache", "info", "--json", env=env).out)
    assert info["entries"] >= 1 and info["bytes"] > 0
    assert Path(info["path"]) == tmp_path / "cache"
    cleared = strict_json(run_cli("cache", "clear", "--json", env=env).out)
    assert cleared["removed"] == info["entries"]
    assert strict_json(run_cli("cache", "info", "--json", env=env).out)["entries"] == 0


def test_json_beyond_float64_is_null(tmp_path: Path) -> None:
    """Weights x1e120 (finite float64): the norm-based proxy overflows float64; --json prints
    null for its value and keeps its log10, never NaN/Infinity."""
    m = write_tiny_bert(tmp_path / "huge", dtype="float64", scale=1e120)
    r = run_cli("analyze", m, "--json", "--no-cache")
    assert r.code == 0, r.err
    s = strict_json(r.out)
    nb = s["bounds"]["norm_based"]
    assert nb["value"] is None  # beyond float64
    assert nb["log10"] is None or nb["log10"] > 308  # its log10 is kept once the math is log-space
    assert s["measures"]["log_spectral_product"] > 2 * 120  # finite values stay numbers
    out = tmp_path / "out"
    r = run_cli("analyze", m, "--json", "--no-cache", "--out", out)
    assert r.code == 0, r.err
    assert strict_json(r.out) == strict_json((out / "summary.json").read_text())


def test_scale_json(tiny: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    other = write_tiny_bert(tmp_path / "m3", layers=3, seed=1, dtype="float64", scale=1e120)
    r = run_cli("scale", tiny, other, "--out", tmp_path / "s", "--json", "--no-cache")
    assert r.code == 0, r.err
    s = strict_json(r.out)
    # Study.summary() with the CLI's out after the title
    assert list(s) == ["title", "out", "models", "growth", "verdict", "skipped", "missing"]
    assert s["out"] == str(tmp_path / "s")
    assert len(s["models"]) == 2 and s["skipped"] == []
    on_disk = pd.read_csv(tmp_path / "s" / "models.csv")
    assert [x["model"] for x in s["models"]] == list(on_disk["model"].astype(str))
    assert {"hidden_size", "num_layers"} >= set(s["verdict"])


def test_json_safe_for_stdout_is_strict() -> None:
    from specbound.io.files import json_safe

    def jsonable(value: object) -> object:  # what print_json writes
        return json_safe(value, default=str)

    frame = pd.DataFrame({"a": [1.0, np.nan], "b": [np.inf, -np.inf], "c": ["x", None]})
    got = jsonable({"f": frame, "n": np.int64(3), "x": np.float32(0.5), "p": Path("/a")})
    assert got == {
        "f": [{"a": 1.0, "b": None, "c": "x"}, {"a": None, "b": None, "c": None}],
        "n": 3,
        "x": 0.5,
        "p": "/a",
    }
    assert jsonable([float("nan"), 1e308 * 10, np.array([1, 2])]) == [None, None, [1, 2]]


# ------------------------------------------------------------------------------ errors


def test_library_parameter_names_become_flags() -> None:
    from specbound.cli.app import cli_message
    from specbound.engines.base import EngineOptionError
    from specbound.errors import Param, SpecboundError

    flags = {"grid_m": "--grid-m", "init": "--init", "ray_address": "--ray-address"}
    msg = SpecboundError(Param("grid_m"), " must be an integer >= 1, got 0")
    assert cli_message(msg, flags) == "--grid-m must be an integer >= 1, got 0"
    assert cli_message(SpecboundError("pass ", Param("init", "CHECKPOINT")), flags) == (
        "pass --init CHECKPOINT"
    )
    unused = EngineOptionError("option ", Param("address"), " is unused", option="address")
    assert cli_message(unused, flags) == "option --ray-address is unused"
    # plain words are never rewritten: distance_from_init, grid_m_max stay as they are
    assert cli_message(SpecboundError("distance_from_init needs it"), flags) == (
        "distance_from_init needs it"
    )


BAD_ANALYZE_OPTIONS = [
    (["--grid-m", "0"], "--grid-m"),
    (["--l-phi", "-1"], "--l-phi"),
    (["--ray-address", "127.0.0.1:1"], "--ray-address"),
    (["--engine", "spark"], "spark"),
]


def test_bad_option_one_line_before_work(tiny: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"

    def check(case: tuple[list[str], str]) -> None:
        args, needle = case
        r = run_cli("analyze", tiny, "--out", out, "--no-cache", *args)
        assert r.code == 2, r.err
        assert needle in r.one_error_line()
        assert not out.exists() and r.out == ""

    check_each(BAD_ANALYZE_OPTIONS, check)


def test_cache_clear_unwritable_is_one_line(
    tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {"SPECBOUND_CACHE_DIR": str(tmp_path / "cache")}
    assert run_cli("analyze", tiny, "-q", env=env).code == 0
    assert strict_json(run_cli("cache", "info", "--json", env=env).out)["entries"] == 1

    def refuse(self: Path, missing_ok: bool = False) -> None:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "unlink", refuse)  # what a read-only folder does, even for root
    r = run_cli("cache", "clear", env=env)
    assert r.code == 2
    assert str(tmp_path / "cache") in r.one_error_line()


@pytest.mark.skipif(
    not hasattr(__import__("os"), "geteuid") or __import__("os").geteuid() == 0,
    reason="root writes into read-only folders",
)
def test_cache_clear_read_only_folder(tiny: Path, tmp_path: Path) -> None:
    env = {"SPECBOUND_CACHE_DIR": str(tmp_path / "cache")}
    assert run_cli("analyze", tiny, "-q", env=env).code == 0
    folders = [p for p in (tmp_path / "cache").rglob("*") if p.is_dir()] + [tmp_path / "cache"]
    for d in folders:
        d.chmod(0o555)
    try:
        r = run_cli("cache", "clear", env=env)
    finally:
        for d in folders:
            d.chmod(0o755)
    assert r.code == 2
    r.one_error_line()


def test_correlate_bad_statistics_options_before_work(tiny: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    manifest = tmp_path / "zoo.csv"
    manifest.write_text(f"model,train_acc,test_acc\n{tiny},1.0,0.5\n")
    out = tmp_path / "out"

    def check(case: tuple[list[str], str]) -> None:
        args, flag = case
        r = run_cli("correlate", "--manifest", manifest, "--out", out, *args)
        assert r.code == 2, r.err
        assert flag in r.one_error_line()  # one line: no "[1/1] ..." model line came before it
        assert not out.exists()

    cases = [
        (["--seed", "-1"], "--seed"),
        (["--bootstrap", str(10**9)], "--bootstrap"),
        (["--bootstrap", "-3"], "--bootstrap"),
    ]
    check_each(cases, check)


def test_zoo_threads_absurd_before_work(tmp_path: Path) -> None:
    pytest.importorskip("torch")  # without the zoo extra, that is the first (and only) error
    out = tmp_path / "zoo"

    def check(threads: str) -> None:
        args = ("zoo", "train", "modular-addition", "--preset", "tiny", "--out", out)
        r = run_cli(*args, "--threads", threads)
        assert r.code == 2, r.err
        assert "--threads" in r.one_error_line()
        assert not out.exists()

    check_each(["0", "-5", str(10**8)], check)


def test_usage_errors_are_one_line() -> None:
    for args in (["analyze"], ["zoo", "train", "x", "--threads", "many"], ["nosuchcommand"]):
        r = run_cli(*args)
        assert r.code == 2, (args, r.err)
        r.one_error_line()


@pytest.fixture(scope="module")
def zoo_manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Eight tiny BERTs on a depth x width grid, two seeds each, with made-up accuracies."""
    d = tmp_path_factory.mktemp("zoo")
    rows = ["model,depth,width,train_acc,test_acc"]
    k = 0
    for depth in (1, 2):
        for width in (4, 8):
            for _seed in (0, 1):
                write_tiny_bert(
                    d / f"m{k}", layers=depth, hidden=width, heads=2, ffn=2 * width, seed=k
                )
                rows.append(f"m{k},{depth},{width},1.0,{0.9 - 0.04 * k}")
                k += 1
    (d / "zoo.csv").write_text("\n".join(rows) + "\n")
    return d / "zoo.csv"


def test_correlate_table_at_80_columns_and_json(zoo_manifest: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "c"
    r = run_cli(
        "correlate",
        "--manifest",
        zoo_manifest,
        "--out",
        out,
        "--bootstrap",
        "200",
        env={"COLUMNS": "80"},
    )
    assert r.code == 0, r.err
    corr = pd.read_csv(out / "correlation.csv")
    lines = r.out.splitlines()
    assert all(len(ln) <= 80 for ln in lines), r.out
    for row in corr.itertuples():  # every tau (and Psi) value is visible at 80 columns
        for v in (row.kendall_tau, row.psi):
            assert ("undefined" if math.isnan(v) else f"{v:.3f}") in r.out, (row.measure, v)
        assert row.measure in "".join(lines).replace(" ", "")  # whole, wrapped at "_" only
    r = run_cli(
        "correlate",
        "--manifest",
        zoo_manifest,
        "--out",
        tmp_path / "j",
        "--bootstrap",
        "200",
        "--json",
        "--quiet",
    )
    assert r.code == 0, r.err
    got = strict_json(r.out)
    assert got["n_models"] == 8
    want = pd.read_csv(tmp_path / "j" / "correlation.csv")
    assert [x["measure"] for x in got["correlation"]] == list(want["measure"])
    for x, (_, w) in zip(got["correlation"], want.iterrows(), strict=True):
        for col in ("kendall_tau", "psi"):
            assert (x[col] is None and math.isnan(w[col])) or x[col] == pytest.approx(w[col])


def test_trajectory_json(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    torch = pytest.importorskip("torch")
    from specbound.track import Tracker

    model = torch.nn.Module()
    model.encoder = torch.nn.Linear(4, 4)  # no Transformer: the tracker refuses it at once
    with pytest.raises(Exception):  # noqa: B017, PT011
        Tracker(model, every=1, out=tmp_path / "bad")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.BertConfig(
        num_hidden_layers=1,
        hidden_size=8,
        num_attention_heads=2,
        intermediate_size=16,
        vocab_size=20,
        max_position_embeddings=8,
    )
    bert = transformers.BertModel(cfg)
    tracker = Tracker(bert, every=1, out=tmp_path / "track")
    for step in range(3):
        with torch.no_grad():
            for p in bert.parameters():
                p.mul_(1.01)
        tracker.step(step, train_acc=0.5 + 0.1 * step, test_acc=0.5)
    tracker.close()
    r = run_cli("trajectory", tmp_path / "track", "--out", tmp_path / "t", "--json")
    assert r.code == 0, r.err
    got = strict_json(r.out)
    assert got["rows"] == 3 and Path(got["report"]) == tmp_path / "t" / "report.html"
    assert Path(got["report"]).is_file() and isinstance(got["milestones"], list)


# ------------------------------------------------------------------------------ terminal


def _fake_correlation(names: list[str]) -> types.SimpleNamespace:
    rng = np.random.default_rng(0)
    rows = [
        {
            "measure": n,
            "n_models": 128,
            "kendall_tau": float(rng.uniform(-1, 1)),
            "kendall_tau_low": -0.615,
            "kendall_tau_high": 0.875,
            "psi": float(rng.uniform(0, 1)),
            "psi_low": -0.205,
            "psi_high": 0.754,
            "sign_error_robust": 0.519,
        }
        for n in names
    ]
    rows[-1].update(kendall_tau=math.nan, kendall_tau_low=math.nan, kendall_tau_high=math.nan)
    rows[0]["verdict"] = "undetermined: tau interval [-0.62, 0.88] over 128 models"
    return types.SimpleNamespace(
        models=pd.DataFrame({"m": range(128)}), correlation=pd.DataFrame(rows)
    )


MEASURES = [
    "spectrum_adaptive",
    "norm_based",
    "spectrum_adaptive_per_sqrt_n",
    "num_parameters_per_sqrt_n",
    "htsr_alpha_weighted",
    "sample_size_only",
]


def test_correlation_table_keeps_key_columns(capsys) -> None:
    def check(width: int) -> None:
        _check_correlation_table(width, capsys)

    check_each([80, 100, 160], check)


def _check_correlation_table(width: int, capsys) -> None:
    from specbound.report.terminal_correlate import print_correlation

    res = _fake_correlation(MEASURES)
    print_correlation(res, width=width)
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert all(len(ln) <= width for ln in lines), text
    for r in res.correlation.itertuples():
        tau = "undefined" if math.isnan(r.kendall_tau) else f"{r.kendall_tau:.3f}"
        for value in (tau, f"{r.psi:.3f}", "0.519", "[-0.615, 0.875]", "[-0.205, 0.754]"):
            assert value in text, (value, text)
        assert r.measure in text.replace("\n", "") or all(
            part in text for part in r.measure.split("_")
        )
    for header in ("n", "tau", "Psi", "sign-err", "robust"):
        assert any(header in ln.split() for ln in lines), header
    assert "…" not in text


@given(st.lists(st.sampled_from(["spectrum", "adaptive", "per", "sqrt", "n", "x"]), min_size=1))
def test_wrap_name_breaks_only_at_separators(words: list[str]) -> None:
    from specbound.report.terminal import wrap_name

    for sep in ("_", "/", "-"):
        name = sep.join(words)
        for width in (1, 5, 10, 30):
            wrapped = wrap_name(name, width)
            assert wrapped.replace("\n", "") == name
            for line in wrapped.splitlines()[:-1]:
                assert line.endswith(sep)  # a break only after a separator
            for line in wrapped.splitlines():
                assert len(line) <= width or sep not in line.rstrip(sep)


def _analysis_like(p_star: np.ndarray, gap: float) -> types.SimpleNamespace:
    return types.SimpleNamespace(
        details=types.SimpleNamespace(p_star=p_star), spectrum_adaptive_ceiling_gap=gap
    )


def test_meaning_line_states_share_gap_and_headroom() -> None:
    from specbound.report.terminal import meaning_line

    a = _analysis_like(np.zeros(156), 0.0)
    a.adaptive_headroom_min = 0.8654
    assert meaning_line(a) == (
        "meaning: 156 of 156 matrices (100%) at p* = 0, ceiling gap 0 decades: spectrum_adaptive "
        "is its rank ceiling, blind to the trained spectra; min adaptive headroom 0.865 decades"
    )
    a = _analysis_like(np.array([0.0, 0.5, 2.0, 0.0]), 0.25)
    a.adaptive_headroom_min = -1.5
    line = meaning_line(a)
    assert line.startswith("meaning: 2 of 4 matrices (50%) at p* = 0, ceiling gap 0.25 decades")
    assert "sees the trained singular values" in line and "rank ceiling" not in line
    assert line.endswith("min adaptive headroom -1.5 decades")


def test_analyze_summary_opens_with_the_bounds(tiny: Path) -> None:
    """The bounds come within the first 15 lines (the model line, then the table), then the one
    line on what they mean, the caveat and where the columns are explained; no sentence about
    "this number" before a number is shown, and every column carries its own unit."""
    from specbound.analysis import analyze
    from specbound.report.terminal import GLOSSARY_POINTER, PROXY_CAVEAT, meaning_line

    r = run_cli("analyze", tiny, "--no-cache", env={"COLUMNS": "80"})
    assert r.code == 0, r.err
    a = analyze(tiny, cache=False)
    lines = r.out.split("\n")
    sa = next(i for i, ln in enumerate(lines) if ln.split()[:1] == ["spectrum_adaptive"])
    nb = next(i for i, ln in enumerate(lines) if ln.split()[:1] == ["norm_based"])
    assert lines[sa - 3].strip() == "bounds" and nb == sa + 1 < 15, r.out
    assert f"{a.bounds.spectrum_adaptive.log10:.4f}" in lines[sa].split()
    assert f"{a.bounds.norm_based.log10:.4f}" in lines[nb].split()
    assert "log10(value)" in lines[sa - 2]
    after = " ".join(" ".join(lines[nb + 1 : nb + 8]).split())
    want = " ".join([meaning_line(a), PROXY_CAVEAT, GLOSSARY_POINTER])
    assert after.startswith(" ".join(want.split())), after
    assert "this number" not in r.out and "rank ceiling" not in " ".join(lines[:sa])
    assert "log10 alpha" not in r.out and all(len(ln) <= 80 for ln in r.out.splitlines())
    # no unit floating above columns it does not describe: "log10" only with its column's name
    assert not any(ln.strip() == "log10" or ln.split()[:1] == ["log10"] for ln in lines)
    assert "(log10)" in r.out  # depth_factor's own unit, under its name


def test_glossary_explains_every_column_the_summary_names() -> None:
    r = run_cli("analyze", "--help", env={"COLUMNS": "120"})
    assert r.code == 0, r.err
    for term in (
        "p*",
        "depth_factor",
        "headroom",
        "gamma x L",
        "QK, OV",
        "M_in, M_out",
        "ceiling gap",
        "contribution",
    ):
        assert term in r.out, term


def test_a_library_warning_is_one_warning_line_without_python_source(tmp_path) -> None:
    """A warning the library raises reaches the CLI user as one ``warning:`` line: no
    ``UserWarning``, no file:line of specbound's source and no source line (Python's default
    shows all three)."""
    pytest.importorskip("matplotlib")
    track = tmp_path / "track"
    track.mkdir()
    src = Path(__file__).resolve().parents[2] / "benchmarks" / "grokking" / "track"
    for name in ("track.csv", "track.json"):
        (track / name).write_bytes((src / name).read_bytes())
    text = (track / "track.csv").read_bytes()
    (track / "track.csv").write_bytes(text[: text.rstrip(b"\n").rfind(b",")])  # a cut last row
    r = run_cli_process("trajectory", track, "--out", tmp_path / "out")
    assert r.code == 0, r.err
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: "), r.err
    assert "interrupted row" in lines[0]
    assert "UserWarning" not in r.err and ".py:" not in r.err and "specbound: " not in r.err
