"""Train same-architecture zoo models together as one batched computation (``--ensemble N``).

Each member is initialized exactly as the one-at-a-time path does (its own seed, its init
checkpoint saved at once), then the members' parameters are stacked along a new leading axis
and trained with ``torch.func.functional_call`` under ``torch.vmap``: one forward and one
backward per step for the whole ensemble. Per member: its own training subset (padded to the
largest active one and masked, so the loss is exactly sum(ce * mask) / n_i), learning rate,
weight decay, ``spectral_reg`` penalty (``regularize.py``, on the stacked weights), training
labels (``label_noise`` applied), gradient-norm clipping (its own norm over its own parameters)
and AdamW state
(the update of ``torch.optim.AdamW``'s single-tensor path written per member). A member whose
training loss reaches the target, or that reaches the step cap, is taken out before the
update, unstacked into its own ``transformers`` model, evaluated and saved by the same code as
the one-at-a-time path; the rest go on (the ensemble shrinks, and so does the padding).

The batched forward uses transformers' "eager" attention (the SDPA CPU kernel has no vmap
batching rule): numbers differ from one-at-a-time training by floating-point order only.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ... import extras
from .plan import ARCH_AXES, ZooPlan, model_name
from .regularize import norm_sums, penalized_names, reg_of
from .single import BETAS, CLIP_NORM, begin_model, finish_model
from .tasks.base import permutation

#: Most members ``auto`` puts in one ensemble (on CUDA; on the CPU ``auto`` is 1: ``auto_mode``).
AUTO_MAX = 16
#: Bytes ``auto`` lets one ensemble's activations take (also capped by available memory / 4).
AUTO_BUDGET = 4 * 2**30
EPS = 1e-8


def _seq_len(task: Any, data: Any) -> int:
    """Tokens per example the model sees (patches + CLS for images, tokens for text)."""
    shape = tuple(data.x.shape[1:])
    if len(shape) == 1:
        return int(shape[0])
    patch = 2  # the digits ViT's patch size
    return int(math.prod(s // patch for s in shape[1:]) + 1)


def _available() -> int:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 8 * 2**30


def activation_bytes(task: Any, data: Any, params: dict[str, Any], n: int) -> int:
    """A generous estimate of one member's training activations (float32): per token and
    layer ~24 width-sized vectors (FFN 4x included) plus the attention maps, kept for backward."""
    t = _seq_len(task, data)
    w, d = params["width"], params["depth"]
    per_layer = n * t * (24 * w) + n * 4 * t * t * 3
    return 4 * (d * per_layer + n * t * w * 4)


def auto_mode(device: str) -> int | str:
    """What ``--ensemble auto`` means on ``device``: the mode measured fastest there.

    CPU -> 1 (one model at a time; ``zoo train --workers`` runs models in parallel processes):
    on the 2-core EPYC of ``benchmarks/zoo_throughput.py`` a 16-model digits grid took 44.4 s
    one at a time against 78.6 s as one 16-member ensemble (0.57x), since a batched matmul of
    16 small models runs at the flop rate of one model's. CUDA -> ``"auto"`` (the memory-bounded
    grouping of ``auto_size``): there one small model leaves the device mostly idle.
    """
    return "auto" if str(device).startswith("cuda") else 1


def auto_size(task: Any, data: Any, members: list[dict[str, Any]], n_max: int) -> int:
    """``--ensemble auto`` on CUDA (``auto_mode``): at most ``AUTO_MAX`` members, and no more
    than the memory budget (min of ``AUTO_BUDGET`` and a quarter of the available memory)
    holds."""
    if not members:
        return 1
    budget = min(AUTO_BUDGET, _available() // 4)
    per = max(activation_bytes(task, data, members[0], n_max), 1)
    return max(1, min(AUTO_MAX, len(members), budget // per))


def groups(
    plan_: ZooPlan, data: Any, todo: list[dict[str, Any]], ensemble: int | str, device: str
) -> Iterator[list[dict[str, Any]]]:
    """Split the pending grid points into ensembles: same architecture, sorted by training-set
    size inside an architecture (less padding), chunks of ``ensemble`` (or ``auto_size``),
    the chunks in a seeded random order."""
    task = plan_.task
    arch: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for params in todo:
        arch.setdefault(tuple(params[a] for a in ARCH_AXES), []).append(params)
    chunks: list[list[dict[str, Any]]] = []
    for members in arch.values():
        sized = sorted(members, key=lambda q: len(task.split(q[task.size_axis], q["seed"])[0]))
        i = 0
        while i < len(sized):
            if ensemble == "auto":
                rest = sized[i:]
                n_max = len(task.split(rest[-1][task.size_axis], rest[-1]["seed"])[0])
                size = auto_size(task, data, rest, n_max)
            else:
                size = int(ensemble)
            chunks.append(sized[i : i + size])
            i += size
    for j in permutation(len(chunks), 1):
        yield chunks[j]


def _stack(tensors: list[Any]) -> Any:
    torch = extras.torch()

    return torch.stack([t.detach() for t in tensors])


@dataclass
class _Member:
    """One grid point of an ensemble.

    ``state`` is ``begin_model``'s record (model, split, temp dir); it becomes ``None`` once
    ``finish_model`` has saved the member. ``n`` is its training-set size.
    """

    params: dict[str, Any]
    dest: Path
    state: dict[str, Any] | None
    n: int
    lr: float
    wd: float
    reg: str = "none"
    strength: float = 0.0


@dataclass
class _Stack:
    """The active members' stacked tensors: row ``r`` is member ``active[r]``.

    ``P``/``B``: parameters and buffers by name; ``exp_avg``/``exp_avg_sq``: AdamW moments;
    ``X``/``Y``: training sets padded to the largest active one, ``M`` the padding mask and
    ``N`` the true sizes.
    """

    P: dict[str, Any]
    B: dict[str, Any]
    exp_avg: dict[str, Any]
    exp_avg_sq: dict[str, Any]
    X: Any
    Y: Any
    M: Any
    N: Any
    active: list[int]


def train_ensemble(
    plan_: ZooPlan,
    data: Any,
    members: list[dict[str, Any]],
    models_dir: Path,
    device: str,
    finished: Callable[[dict[str, Any], dict[str, Any]], None],
) -> None:
    """Train ``members`` (grid points of one architecture) together; ``finished(params,
    metrics)`` is called as each one is saved. Temp directories of members not saved (an
    error, an interrupt) are removed."""
    torch = extras.torch()

    dev = torch.device(device)
    t_start = time.perf_counter()
    team: list[_Member] = []
    try:
        for params in members:
            team.append(_begin(plan_, data, params, models_dir / model_name(params)))
        _train(plan_, data, team, dev, finished, t_start)
    finally:
        for m in team:
            if m.state is not None:
                m.state["temp"].discard()


def _begin(plan_: ZooPlan, data: Any, params: dict[str, Any], dest: Path) -> _Member:
    """Seed, build and save the initialization of one member (``begin_model``)."""
    state = begin_model(plan_.task, data, params, dest)
    reg, strength = reg_of(params)
    return _Member(
        params=params,
        dest=dest,
        state=state,
        n=len(state["train_idx"]),
        lr=float(params["lr"]),
        wd=float(params["weight_decay"]),
        reg=reg,
        strength=strength,
    )


def _train(
    plan_: ZooPlan,
    data: Any,
    team: list[_Member],
    dev: Any,
    finished: Callable[[dict[str, Any], dict[str, Any]], None],
    t_start: float,
) -> None:
    """The batched loop: evaluate all active members, finish those that stop, step the rest."""
    torch = extras.torch()
    vmap = extras.load("torch.func").vmap

    first = team[0].state["model"]  # type: ignore[index]
    base = _meta_base(first)
    stack = _stack_members(data, team, dev)
    pad_rows = _pad_rows(first)
    batched = vmap(_member_loss(plan_.task, base))
    reg_names = penalized_names(first) if any(m.reg != "none" for m in team) else []
    step = 0
    base.train()
    while stack.active:
        losses = batched(stack.P, stack.B, stack.X, stack.Y, stack.M, stack.N)
        vals = losses.tolist()
        stop = [r for r, v in enumerate(vals) if v <= plan_.target_loss or step >= plan_.max_steps]
        for r in stop:
            member = team[stack.active[r]]
            metrics = _finish(plan_, data, member, stack, r, step, dev, len(team), t_start)
            finished(member.params, metrics)
            member.state = None
        keep = [r for r in range(len(stack.active)) if r not in set(stop)]
        if not keep:
            break
        _backward(stack, losses + _penalties(stack, team, reg_names, dev), keep, pad_rows, dev)
        step += 1
        with torch.no_grad():
            _adamw_step(
                stack.P,
                stack.exp_avg,
                stack.exp_avg_sq,
                [team[i].lr for i in stack.active],
                [team[i].wd for i in stack.active],
                step,
                dev,
            )
        if stop:
            stack = _shrink(stack, keep, team, dev)


def _meta_base(model: Any) -> Any:
    """A parameterless (meta) copy of ``model`` with eager attention, for ``functional_call``."""
    base = copy.deepcopy(model)
    base.set_attn_implementation("eager")
    return base.to("meta")


def _stack_members(data: Any, team: list[_Member], dev: Any) -> _Stack:
    """Stack the members' parameters, buffers and padded training sets on ``dev``."""
    torch = extras.torch()

    models = [m.state["model"] for m in team]  # type: ignore[index]
    pnames = [n for n, _ in models[0].named_parameters()]
    bnames = [n for n, _ in models[0].named_buffers()]
    P = {n: _stack([dict(m.named_parameters())[n] for m in models]).to(dev) for n in pnames}
    B = {n: _stack([dict(m.named_buffers())[n] for m in models]).to(dev) for n in bnames}
    exp_avg = {n: torch.zeros_like(v) for n, v in P.items()}
    exp_avg_sq = {n: torch.zeros_like(v) for n, v in P.items()}
    sizes = [m.n for m in team]
    n_max = max(sizes)
    rows = [m.state["train_idx"] for m in team]  # type: ignore[index]
    labels = [m.state["train_y"] for m in team]  # type: ignore[index]  # label_noise applied
    X = torch.stack(
        [data.x[idx + [idx[0]] * (n_max - k)] for idx, k in zip(rows, sizes, strict=True)]
    ).to(dev)
    Y = torch.stack(
        [torch.cat([y, y[:1].expand(n_max - k)]) for y, k in zip(labels, sizes, strict=True)]
    ).to(dev)
    M = torch.stack([(torch.arange(n_max) < k).to(torch.float32) for k in sizes]).to(dev)
    N = torch.tensor(sizes, dtype=torch.float32, device=dev)
    for v in P.values():
        v.requires_grad_(True)
    return _Stack(P, B, exp_avg, exp_avg_sq, X, Y, M, N, active=list(range(len(team))))


def _pad_rows(model: Any) -> list[tuple[str, int]]:
    """``(parameter name, row)`` of each embedding's padding row.

    nn.Embedding(padding_idx=...) never updates that row; under vmap its backward does not
    know the rule, so the row's gradient is zeroed by hand (BERT: pad_token_id 0).
    """
    torch = extras.torch()

    return [
        (f"{mod_name}.weight", mod.padding_idx)
        for mod_name, mod in model.named_modules()
        if isinstance(mod, torch.nn.Embedding) and mod.padding_idx is not None
    ]


def _member_loss(task: Any, base: Any) -> Callable[..., Any]:
    """One member's masked mean cross-entropy ``sum(ce * mask) / n``, to be vmapped."""
    torch = extras.torch()
    functional_call = extras.load("torch.func").functional_call

    def member_loss(p: Any, b: Any, x: Any, y: Any, mask: Any, n: Any) -> Any:
        logits = task.logits(_Bound(base, p, b, functional_call), x)
        ce = torch.nn.functional.cross_entropy(logits, y, reduction="none")
        return (ce * mask).sum() / n

    return member_loss


def _finish(
    plan_: ZooPlan,
    data: Any,
    member: _Member,
    stack: _Stack,
    r: int,
    step: int,
    dev: Any,
    size: int,
    t_start: float,
) -> dict[str, Any]:
    """Unstack row ``r`` into the member's own model, evaluate and save it (``finish_model``);
    its wall time is the ensemble's so far shared equally among the ``size`` members."""
    torch = extras.torch()

    assert member.state is not None
    m = member.state["model"]
    with torch.no_grad():
        for n, src in stack.P.items():
            dict(m.named_parameters())[n].copy_(src[r].detach().to("cpu"))
    m.to(dev)
    share = (time.perf_counter() - t_start) / size
    return finish_model(
        plan_, data, member.params, member.dest, member.state, step, dev, size, wall_s=share
    )


def _penalties(stack: _Stack, team: list[_Member], names: list[str], dev: Any) -> Any:
    """Each active member's ``spectral_reg`` penalty ``lambda * sum ||W||`` (``regularize.py``)
    on the stacked weights ``(E, out, in)``, zero for members without one: shape ``(E,)``."""
    torch = extras.torch()

    if not names:
        return torch.zeros(len(stack.active), device=dev)
    nuc, spec = norm_sums([stack.P[n] for n in names])
    members = [team[i] for i in stack.active]
    lam_nuc = torch.tensor([m.strength if m.reg == "nuclear" else 0.0 for m in members], device=dev)
    lam_spec = torch.tensor(
        [m.strength if m.reg == "spectral" else 0.0 for m in members], device=dev
    )
    return lam_nuc * nuc + lam_spec * spec


def _backward(
    stack: _Stack, losses: Any, keep: list[int], pad_rows: list[tuple[str, int]], dev: Any
) -> None:
    """Gradients of the kept rows' losses (the stopped rows' are zero), padding rows zeroed."""
    torch = extras.torch()

    go = torch.zeros(len(stack.active), device=dev)
    go[keep] = 1.0
    for v in stack.P.values():
        v.grad = None
    (losses * go).sum().backward()
    for pname, row in pad_rows:
        stack.P[pname].grad[:, row] = 0.0


def _shrink(stack: _Stack, keep: list[int], team: list[_Member], dev: Any) -> _Stack:
    """The stack of rows ``keep`` only, its padding cut to the largest kept training set."""
    torch = extras.torch()

    idx = torch.tensor(keep, device=dev)
    active = [stack.active[r] for r in keep]
    n_max = max(team[i].n for i in active)
    return _Stack(
        P={n: v.detach()[idx].requires_grad_(True) for n, v in stack.P.items()},
        B={n: v[idx] for n, v in stack.B.items()},
        exp_avg={n: v[idx] for n, v in stack.exp_avg.items()},
        exp_avg_sq={n: v[idx] for n, v in stack.exp_avg_sq.items()},
        X=stack.X[idx, :n_max],
        Y=stack.Y[idx, :n_max],
        M=stack.M[idx, :n_max],
        N=stack.N[idx],
        active=active,
    )


class _Bound:
    """A callable standing in for a model inside vmap: ``functional_call(base, (p, b), x)``."""

    def __init__(self, base: Any, p: Any, b: Any, fc: Any) -> None:
        self.base, self.p, self.b, self.fc = base, p, b, fc

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fc(self.base, (self.p, self.b), args, kwargs)


def _adamw_step(
    P: dict[str, Any],
    exp_avg: dict[str, Any],
    exp_avg_sq: dict[str, Any],
    lr: list[float],
    wd: list[float],
    step: int,
    dev: Any,
) -> None:
    """Per-member gradient-norm clipping then AdamW (torch.optim.AdamW's single-tensor update,
    per-member lr and weight decay), in place on the stacked tensors."""
    torch = extras.torch()

    grads = {n: v.grad for n, v in P.items()}
    norms = torch.stack([torch.linalg.vector_norm(g.flatten(1), dim=1) for g in grads.values()])
    total = torch.linalg.vector_norm(norms, dim=0)
    coef = torch.clamp(CLIP_NORM / (total + 1e-6), max=1.0)
    b1, b2 = BETAS
    bc1, bc2 = 1 - b1**step, 1 - b2**step
    decay = torch.tensor([1 - a * w for a, w in zip(lr, wd, strict=True)], device=dev)
    step_size = torch.tensor([a / bc1 for a in lr], device=dev)
    bc2_sqrt = math.sqrt(bc2)
    for n, p in P.items():
        shape = (-1,) + (1,) * (p.dim() - 1)
        g = grads[n] * coef.view(shape)
        p.mul_(decay.view(shape))
        exp_avg[n].lerp_(g, 1 - b1)
        exp_avg_sq[n].mul_(b2).addcmul_(g, g, value=1 - b2)
        denom = (exp_avg_sq[n].sqrt() / bc2_sqrt).add_(EPS)
        p.sub_(step_size.view(shape) * exp_avg[n] / denom)
