"""The local engine: every model analyzed in this process, one after the other (the default)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..analysis import Analysis


def analyze(model: Any, **analyze_kwargs: Any) -> Analysis:
    """``specbound.analysis.analyze`` itself."""
    from ..analysis import analyze as run

    return run(model, **analyze_kwargs)


def analyze_models(
    models: Sequence[Any],
    *,
    names: Sequence[str | None] | None = None,
    analyze_kwargs: Mapping[str, Any] | None = None,
    on_model: Callable[[int, int, str], None] | None = None,
    on_skip: Callable[[str, str], None] | None = None,
) -> tuple[list[Analysis], list[tuple[str, str]]]:
    """(analyses in input order, (name, reason) of each model skipped for bad input).

    ``on_model(i, n, name)`` is called before model i (1-based) of n; a ``SpecboundError``
    skips the model (``on_skip(name, reason)``) instead of stopping the sweep.
    """
    from ..analysis import analyze as run
    from ..errors import SpecboundError

    kw = dict(analyze_kwargs or {})
    analyses: list[Analysis] = []
    skipped: list[tuple[str, str]] = []
    for i, m in enumerate(models):
        name = names[i] if names is not None else None
        label = str(name or m)
        if on_model is not None:
            on_model(i + 1, len(models), label)
        try:
            analyses.append(run(m, name=name, **kw))
        except SpecboundError as exc:
            skipped.append((label, str(exc)))
            if on_skip is not None:
                on_skip(label, str(exc))
    return analyses, skipped
