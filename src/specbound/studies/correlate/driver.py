"""One correlate study into one folder: the decisions a caller would otherwise make itself.

``specbound correlate`` parses its flags into ``CorrelateOptions(...)`` and runs
:func:`compute`, renders the page, then :func:`write` (below); a script may call
``correlate_into(out, CorrelateOptions(...))``, both steps without a page. The driver decides:

- **pooling**: the sources are zoo directories, a manifest, or folders written by correlate
  (re-evaluated from their models.csv, nothing analyzed again). One zoo (or one manifest) is one
  :func:`.run.correlate`; several zoos are each analyzed, then pooled
  (:func:`.multizoo.pool`); one or more correlate folders are pooled as they are. Zoos and
  folders are never mixed, and ``grid``
  (a zoo per folder, for folders written before protocol v3) goes with folders only;
- **worker defaults**: ``data_workers`` None is one process per usable CPU with data measures
  (1 on a GPU, :func:`.data.default_workers`), else 1;
- **resume**: on a distributed engine a single zoo keeps per-model resume records beside
  ``out`` (:func:`.io.records.state_dir_for`: ``.OUT.specbound-sweep``), reads them back
  on a re-run, and deletes those it wrote once every model is written.

Every check (the sources, the parameters, the engine, ``out`` against every input, a folder's
files) runs before any model is analyzed; ``ready()`` is called after them, before the work (the
CLI requires its plot extra there, so a bad input is told first).

Two steps, so that the page is rendered between them by whoever renders it (the CLI, with the
report package), and ``out`` goes no further than this driver and io::

    run = compute(out, options, ...)      # checks, resume, the study; what is beside out
    files = correlation_files(run.result, **run.beside.page_args())   # report/: in memory
    write(run, files)                     # io writes the tables and the files, atomically

``correlate_into`` is both steps without a page (the tables and correlate.json).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...engines import resolve
from ...errors import Param, SpecboundError, Spelling
from ...io.outdir import check_output_dir
from ...io.records import clear_records, state_dir_for
from ...io.siblings import STUDY, sibling_pages
from ...validation import check_params
from ..answer import study_rows
from . import multizoo as P
from .data import default_workers
from .run import correlate

if TYPE_CHECKING:
    import pandas as pd

    from ...engines.base import Engine
    from .result import Correlation


@dataclass(frozen=True)
class CorrelateOptions:
    """What to correlate and how (:func:`correlate_into`; the parameters of
    :func:`.run.correlate` where they share a name). ``zoos``: zoo directories, or folders
    written by correlate; ``manifest``: a zoo.csv instead of ``zoos``; ``grid``: with correlate
    folders written before protocol v3, the zoo directory (or zoo.json) of each, in order;
    ``data_workers`` None: the default (module doc)."""

    zoos: Sequence[Path] = ()
    manifest: Path | None = None
    grid: Sequence[Path] | None = None
    axes: str | Sequence[str] | None = None
    gap: str | None = None
    include_unconverged: bool = False
    bootstrap: int = 1000
    seed: int = 0
    primary: str = "auto"
    data_measures: bool = False
    data_workers: int | None = None
    device: str | None = None
    cache: bool = True


@dataclass(frozen=True)
class Progress:
    """Where a study tells what it does (each None: nothing): ``on_model(done, n, name, error)``
    per model, ``on_data(line)`` per data-measure model, ``on_resume(name)`` per model read back
    from a resume record."""

    on_model: Callable[[int, int, str, str | None], None] | None = None
    on_data: Callable[[str], None] | None = None
    on_resume: Callable[[str], None] | None = None


@dataclass(frozen=True)
class Beside:
    """What the page of ``out`` shows of the folders beside it, found before the write:
    ``siblings``, (label, relative href) of the pages there (``io.siblings.sibling_pages``);
    ``study_href``, the study's page when it is there; ``study``, the study's primary rows of
    this folder (``studies.answer.study_rows``; None when there are none or they cannot be
    read)."""

    siblings: list[tuple[str, str]] = field(default_factory=list)
    study_href: str | None = None
    study: pd.DataFrame | None = None

    def page_args(self) -> dict[str, Any]:
        """The keyword arguments of the page (``report.pages.correlate.correlation_files``)."""
        return {"siblings": self.siblings, "study_href": self.study_href, "study": self.study}


def beside(out: str | Path) -> Beside:
    """The pages and the study beside the folder ``out`` (:class:`Beside`)."""
    me = Path(out)
    if me.name == STUDY:  # the study's own folder: no study beside it
        return Beside(sibling_pages(me))
    there = me.absolute().parent / STUDY
    try:
        rows = study_rows(there, me.name)
    except SpecboundError:
        rows = None
    href = f"../{STUDY}/report.html" if (there / "report.html").is_file() else None
    return Beside(sibling_pages(me), href, rows)


@dataclass
class Written:
    """A study of :func:`compute`, then :func:`write`: the ``result``, the folder ``out`` (as
    given), the models whose data measures failed (``data_failed``: listed in skipped.csv; a
    re-run retries them), what is ``beside`` ``out`` (for its page) and the resume records
    to clear once it is written (``records``: None, none)."""

    result: Correlation
    out: Path
    data_failed: list[str] = field(default_factory=list)
    beside: Beside = field(default_factory=Beside)
    records: Path | None = None

    def summary(self) -> dict[str, Any]:
        """What ``specbound correlate --json`` prints (``Correlation.cli_summary``)."""
        return self.result.cli_summary(self.out)


@dataclass(frozen=True)
class _Plan:
    """The decisions of :func:`compute`, made before any work."""

    folders: list[Path]
    data_workers: int
    inputs: list[Path]
    replaces: Path | None


def _plan(o: CorrelateOptions) -> _Plan:
    """Check the sources, then the parameters (module doc); the default ``data_workers``."""
    folders = _sources(o)
    workers = _data_workers(o)
    given = [*o.zoos, *([o.manifest] if o.manifest is not None else []), *(o.grid or [])]
    replaces = folders[0] if len(folders) == 1 else None  # re-evaluated in place: read first
    return _Plan(folders, workers, [Path(p) for p in given], replaces)


def _sources(o: CorrelateOptions) -> list[Path]:
    """The correlate folders among the sources ([] for zoos or a manifest): pooling's rules."""
    zoos = list(o.zoos)
    if bool(zoos) == (o.manifest is not None):
        raise SpecboundError(
            "correlate needs a zoo: zoos (zoo directories or correlate folders) or ",
            Param("manifest", "FILE.csv"),
        )
    folders = [Path(z) for z in zoos if P.is_result_folder(z)]
    if folders and len(folders) != len(zoos):
        raise SpecboundError("pass either zoo directories or correlate folders, not both")
    if o.grid and (not folders or len(o.grid) != len(folders)):
        raise SpecboundError(
            Param("grid"), " goes with correlate folders, one zoo directory per folder, in order"
        )
    if folders and (o.data_measures or o.data_workers is not None):
        raise SpecboundError(
            Param("data_measures"),
            ": a correlate folder's measures are read from its models.csv; run correlate on "
            "the zoo directory to compute them",
        )
    P.check_distinct(zoos)
    return folders


def _data_workers(o: CorrelateOptions) -> int:
    """``bootstrap``, ``seed`` and ``data_workers`` checked with :func:`.run.correlate`'s own
    constraints (before the engine starts and before a folder is read: ``pool``, the folders'
    path, accepts bootstrap 0 too, this driver does not); the processes of the data measures."""
    scalars: dict[str, Any] = {"bootstrap": o.bootstrap, "seed": o.seed}
    if o.data_workers is not None:
        scalars["data_workers"] = o.data_workers
    check_params(scalars, correlate.parameter_constraints)  # type: ignore[attr-defined]
    if o.data_workers is not None:
        if not o.data_measures:
            raise SpecboundError(
                Param("data_workers"),
                " goes with ",
                Param("data_measures"),
                " (it sets the processes computing them)",
            )
        return o.data_workers
    return default_workers(o.device) if o.data_measures else 1


def compute(
    out: str | Path,
    options: CorrelateOptions,
    *,
    engine: str | Engine | None = None,
    engine_options: Any = None,
    progress: Progress | None = None,
    ready: Callable[[], None] | None = None,
    flag: Spelling | None = None,
) -> Written:
    """Run the correlate study ``options`` describes, for the folder ``out`` (module doc);
    nothing is written to ``out`` yet (:func:`write`).

    ``engine``/``engine_options``, ``flag`` (how a skip reason or a note names a parameter: the
    CLI gives its flags): as :func:`.run.correlate`'s. Raises ``SpecboundError`` for a
    bad input before any work; a model that fails is listed in skipped.csv, never the end of
    the study."""
    o, tell = options, progress or Progress()
    plan = _plan(o)
    eng = resolve(engine, engine_options)  # after every other check, before any work
    check_output_dir(out, inputs=plan.inputs, replaces=plan.replaces)
    parts = _read_parts(plan.folders, o.grid)  # cheap, and a bad folder is told before ready()
    if ready is not None:
        ready()
    state = state_dir_for(out) if eng.distributed else None
    resume = state is not None and parts is None and len(o.zoos) <= 1
    if parts is None:
        parts, lost, single = _analyzed(o, plan, eng, tell, state if resume else None, flag)
    else:
        lost, single = [], None
    result = single or P.pool(parts, bootstrap=o.bootstrap, seed=o.seed, primary=o.primary)
    return Written(result, Path(out), lost, beside(out), state)


def write(run: Written, files: Mapping[str, bytes | str] | None = None) -> Written:
    """Write ``run``'s tables and correlate.json, and ``files`` (relative path -> bytes or
    text: the page and its figures), into ``run.out`` in one atomic write
    (``Correlation.to_dir``); then, every model written, delete the resume records."""
    run.result.to_dir(run.out, files=files)
    if run.records is not None and run.result.skipped.empty:  # the records have served
        clear_records(run.records)
    return run


def correlate_into(
    out: str | Path,
    options: CorrelateOptions,
    *,
    engine: str | Engine | None = None,
    engine_options: Any = None,
    progress: Progress | None = None,
    ready: Callable[[], None] | None = None,
    flag: Spelling | None = None,
) -> Written:
    """:func:`compute`, then :func:`write` without a page: the tables and correlate.json."""
    run = compute(
        out,
        options,
        engine=engine,
        engine_options=engine_options,
        progress=progress,
        ready=ready,
        flag=flag,
    )
    return write(run)


def _read_parts(folders: list[Path], grid: Sequence[Path] | None) -> list[P.Part] | None:
    """The correlate folders as parts (read and checked now), None when the sources are zoos."""
    if not folders:
        return None
    given: list[Path | None] = list(grid) if grid else [None] * len(folders)
    return [P.read_part(f, g) for f, g in zip(folders, given, strict=True)]


def _analyzed(
    o: CorrelateOptions,
    plan: _Plan,
    eng: Engine,
    tell: Progress,
    state_dir: Path | None,
    flag: Spelling | None,
) -> tuple[list[P.Part], list[str], Correlation | None]:
    """Each zoo analyzed (:func:`.run.correlate`): (their parts, the models whose data measures
    failed, the result itself when there is one zoo: nothing to pool)."""
    sources: list[Any] = list(o.zoos) or [o.manifest]
    each = []
    for source in sources:
        # (correlate refuses bootstrap 0, so each zoo's own tables are computed, and dropped
        # when several are pooled)
        each.append(
            correlate(
                source,
                axes=o.axes,
                gap=o.gap,
                include_unconverged=o.include_unconverged,
                bootstrap=o.bootstrap,
                seed=o.seed,
                cache=o.cache,
                device=o.device,
                on_model=tell.on_model,
                engine=eng,
                data_measures=o.data_measures,
                data_workers=plan.data_workers,
                on_data=tell.on_data,
                primary=o.primary,
                state_dir=state_dir,
                on_resume=None if state_dir is None else tell.on_resume,
                flag=flag,
            )
        )
    lost = [m for r in each for m in r.data_failed]
    if len(each) == 1:
        return [], lost, each[0]
    return [P.part_of(r) for r in each], lost, None


__all__ = [
    "Beside",
    "CorrelateOptions",
    "Progress",
    "Written",
    "beside",
    "compute",
    "correlate_into",
    "write",
]
