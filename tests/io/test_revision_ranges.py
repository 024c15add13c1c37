"""``--revisions`` ranges: parsed into steps; a range naming too many revisions is refused
before any list is built (``pythia:0:100000000000:1`` ran out of memory)."""

from __future__ import annotations

import pytest

from specbound.errors import CheckpointError
from specbound.io.hub import MAX_REVISIONS, parse_revision_range


@pytest.mark.parametrize(("start", "stop", "step"), [(0, 10, 3), (0, 0, 1), (7, 8, 5), (3, 100, 7)])
def test_a_range_gives_its_steps(start, stop, step):
    template, steps = parse_revision_range(f"pythia:{start}:{stop}:{step}")
    assert template == "step{N}"
    assert steps == [n for n in range(start, stop + 1) if (n - start) % step == 0]


def test_the_cap_is_inclusive():
    _, steps = parse_revision_range(f"pythia:0:{MAX_REVISIONS - 1}")
    assert len(steps) == MAX_REVISIONS


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("pythia:0:100000000000:1", "100,000,000,001"),
        (f"pythia:0:{MAX_REVISIONS}", f"{MAX_REVISIONS + 1:,}"),
        ("pythia:0:" + "9" * 30 + ":1", f"{10**30:,}"),  # beyond sys.maxsize: no OverflowError
        ("pythia:" + ",".join(["5"] * (MAX_REVISIONS + 1)), f"{MAX_REVISIONS + 1:,}"),
    ],
)
def test_too_many_revisions_are_refused_at_once(text, count):
    with pytest.raises(CheckpointError) as e:
        parse_revision_range(text)
    msg = str(e.value)
    assert f" names {count} revisions, more than {MAX_REVISIONS:,}; raise STEP" in msg
    assert msg.startswith("revisions=") and "\n" not in msg
