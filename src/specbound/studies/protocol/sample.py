"""What a statistic's functions get (:class:`Sample`): one measure over the models where it and
the gap are finite, with the design of the study. Pure (numpy only).

A :class:`~.registry.Statistic`'s ``point(sample)`` reads ``mu``, ``g``, ``codes`` (axis codes,
models x axes), ``config`` (configuration ids), ``design`` (groups and strata,
:class:`~.stats.Design`), ``cells`` (tau_arch's cells) and ``axes``; its ``draws(sample,
counts)`` gets the counts (draws x configurations) of its kind of bootstrap and
:meth:`Sample.weights` turns them into model weights. The statistics of :mod:`.stats` are
computed together, once per sample (:meth:`Sample.joint`) and once per count table
(:meth:`Sample.joint_draws`); every statistic built on them reads its field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import stats as S


@dataclass
class Sample:
    """One measure over the models where it and the gap are finite (module doc).

    ``n_configurations_all``: the configurations of the whole study (K of the pair weights
    1 - 1/K of a configuration resample); ``level``: the interval level."""

    mu: np.ndarray
    g: np.ndarray
    codes: np.ndarray
    config: np.ndarray
    design: S.Design
    axes: list[str]
    n_configurations_all: int
    cells: tuple[np.ndarray, ...] | None = None
    level: float = 0.95
    memo: dict[Any, Any] = field(default_factory=dict, repr=False)

    @property
    def size(self) -> int:
        """The number of models."""
        return int(self.mu.size)

    def weights(self, counts: np.ndarray) -> np.ndarray:
        """Model weights (draws x models) of configuration ``counts`` (draws x configurations):
        a configuration drawn c times gives each of its models weight c."""
        return counts[:, self.config]

    def joint(self) -> S.Stats:
        """Every statistic of :func:`.stats.statistics` on the models as they are (w = 1)."""
        if "point" not in self.memo:
            self.memo["point"] = S.statistics(self.mu, self.g, self.design, np.ones((1, self.size)))
        return self.memo["point"]

    def joint_draws(self, counts: np.ndarray) -> S.Stats:
        """Every statistic of :func:`.stats.statistics` on each resample of ``counts`` (a
        configuration resample: pairs inside a configuration at 1 - 1/K), in chunks of draws,
        joined."""
        key = ("draws", id(counts))
        if key not in self.memo:
            within = 1.0 - 1.0 / self.n_configurations_all
            parts = [
                S.statistics(self.mu, self.g, self.design, counts[c][:, self.config], within)
                for c in S.draw_chunks(self.size, counts.shape[0])
            ]
            self.memo[key] = (counts, S.join_stats(parts))  # counts kept: its id stays its own
        return self.memo[key][1]
