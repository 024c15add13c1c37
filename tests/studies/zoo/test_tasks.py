"""The zoo's three tasks: their examples and labels (recomputed here from the task's
definition), their train/test splits (disjoint, seeded, of the asked size) and the sizes they
refuse."""

from __future__ import annotations

import pytest

from specbound.studies.zoo.tasks import get_task, task_names
from specbound.studies.zoo.tasks.digits import Digits
from specbound.studies.zoo.tasks.modular_addition import ModularAddition, P
from specbound.studies.zoo.tasks.sparse_parity import POSITIONS, TEST_SIZE, SparseParity, T

pytest.importorskip("torch")


def test_the_registry_holds_the_three_tasks() -> None:
    assert set(task_names()) == {"modular-addition", "sparse-parity", "digits"}
    for name, cls in (
        ("modular-addition", ModularAddition),
        ("sparse-parity", SparseParity),
        ("digits", Digits),
    ):
        assert isinstance(get_task(name), cls)


def test_modular_addition_labels_every_pair() -> None:
    task = ModularAddition()
    data = task.data()
    x, y = data.x.tolist(), data.y.tolist()
    assert data.num_classes == P and len(x) == P * P
    assert {(a, b) for _eq, a, b in x} == {(a, b) for a in range(P) for b in range(P)}
    assert all(
        row[0] == P and label == (row[1] + row[2]) % P for row, label in zip(x, y, strict=True)
    )
    train, test = task.split(0.3, seed=1)
    assert len(train) == round(0.3 * P * P) and not set(train) & set(test)
    assert sorted(train + test) == list(range(P * P))
    assert task.split(0.3, seed=1) == (train, test) and task.split(0.3, seed=2) != (train, test)
    assert task.size_problem(0.5) is None
    assert all(task.size_problem(s) for s in (0.0, 1.0, 1e-6))


def test_sparse_parity_labels_are_the_parity_of_its_positions() -> None:
    task = SparseParity()
    data = task.data()
    x, y = data.x.tolist(), data.y.tolist()
    assert len(x) == 2**T and all(len(row) == T + 1 and row[0] == 2 for row in x)
    assert {tuple(row[1:]) for row in x} == {
        tuple((i >> k) & 1 for k in range(T)) for i in range(2**T)
    }
    assert all(
        label == sum(row[1 + p] for p in POSITIONS) % 2 for row, label in zip(x, y, strict=True)
    )
    train, test = task.split(100, seed=0)
    assert len(train) == 100 and len(test) == TEST_SIZE and not set(train) & set(test)
    assert task.split(50, seed=3)[1] == test  # one fixed test set for every size and seed
    assert task.size_problem(2.5) and task.size_problem(2**T) and task.size_problem(1) is None


def test_digits_split_keeps_one_test_set() -> None:
    pytest.importorskip("sklearn")
    task = Digits()
    data = task.data()
    assert tuple(data.x.shape) == (1797, 1, 8, 8) and data.num_classes == 10
    assert float(data.x.min()) >= -1.0 and float(data.x.max()) <= 1.0
    assert sorted(set(data.y.tolist())) == list(range(10))
    train, test = task.split(200, seed=0)
    assert len(train) == 200 and len(test) == 1797 - 1200 and not set(train) & set(test)
    assert task.split(20, seed=1)[1] == test
    assert task.size_problem(1200) is None and task.size_problem(1201)
