"""Train same-architecture zoo models together as one batched computation (``--ensemble N``).

Each member is initialized exactly as the one-at-a-time path does (its own seed, its init
checkpoint saved at once), then the members' parameters are stacked along a new leading axis
and trained with ``torch.func.functional_call`` under ``torch.vmap``: one forward and one
backward per step for the whole ensemble. Per member: its own training subset (padded to the
largest active one and masked, so the loss is exactly sum(ce * mask) / n_i), learning rate,
weight decay, gradient-norm clipping (its own norm over its own parameters) and AdamW state
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
from pathlib import Path
from typing import Any

from .plan import ARCH_AXES, ZooPlan, model_name
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
    import torch

    return torch.stack([t.detach() for t in tensors])


def train_ensemble(
    plan_: ZooPlan,
    data: Any,
    members: list[dict[str, Any]],
    models_dir: Path,
    device: str,
    finished: Callable[[dict[str, Any], dict[str, Any]], None],
) -> None:
    """Train ``members`` (grid points of one architecture) together; ``finished(params,
    metrics)`` is called as each one is saved."""
    import torch
    from torch.func import functional_call, vmap

    task = plan_.task
    dev = torch.device(device)
    t_start = time.perf_counter()
    states = []
    try:
        for params in members:
            states.append(begin_model(task, data, params, models_dir / model_name(params)))
        size = len(members)
        models = [s["model"] for s in states]
        base = copy.deepcopy(models[0])
        base.set_attn_implementation("eager")
        base = base.to("meta")
        pnames = [n for n, _ in models[0].named_parameters()]
        bnames = [n for n, _ in models[0].named_buffers()]
        P = {n: _stack([dict(m.named_parameters())[n] for m in models]).to(dev) for n in pnames}
        B = {n: _stack([dict(m.named_buffers())[n] for m in models]).to(dev) for n in bnames}
        exp_avg = {n: torch.zeros_like(v) for n, v in P.items()}
        exp_avg_sq = {n: torch.zeros_like(v) for n, v in P.items()}
        sizes = [len(s["train_idx"]) for s in states]
        n_max = max(sizes)
        X = torch.stack(
            [
                data.x[s["train_idx"] + [s["train_idx"][0]] * (n_max - k)]
                for s, k in zip(states, sizes, strict=True)
            ]
        ).to(dev)
        Y = torch.stack(
            [
                data.y[s["train_idx"] + [s["train_idx"][0]] * (n_max - k)]
                for s, k in zip(states, sizes, strict=True)
            ]
        ).to(dev)
        M = torch.stack([(torch.arange(n_max) < k).to(torch.float32) for k in sizes]).to(dev)
        N = torch.tensor(sizes, dtype=torch.float32, device=dev)
        lr = [float(q["lr"]) for q in members]
        wd = [float(q["weight_decay"]) for q in members]
        # nn.Embedding(padding_idx=...) never updates that row; under vmap its backward does
        # not know the rule, so the row's gradient is zeroed by hand (BERT: pad_token_id 0)
        pad_rows = [
            (f"{mod_name}.weight", mod.padding_idx)
            for mod_name, mod in models[0].named_modules()
            if isinstance(mod, torch.nn.Embedding) and mod.padding_idx is not None
        ]
        active = list(range(size))  # member index of each stacked row
        for v in P.values():
            v.requires_grad_(True)

        def member_loss(p: Any, b: Any, x: Any, y: Any, mask: Any, n: Any) -> Any:
            logits = task.logits(_Bound(base, p, b, functional_call), x)
            ce = torch.nn.functional.cross_entropy(logits, y, reduction="none")
            return (ce * mask).sum() / n

        batched = vmap(member_loss)
        step = 0
        base.train()
        while active:
            losses = batched(P, B, X, Y, M, N)
            vals = losses.tolist()
            stop = [
                r for r, v in enumerate(vals) if v <= plan_.target_loss or step >= plan_.max_steps
            ]
            for r in stop:
                i = active[r]
                m = states[i]["model"]
                with torch.no_grad():
                    for n, src in P.items():
                        dict(m.named_parameters())[n].copy_(src[r].detach().to("cpu"))
                m.to(dev)
                share = (time.perf_counter() - t_start) / size
                finished(
                    members[i],
                    finish_model(
                        plan_,
                        data,
                        members[i],
                        models_dir / model_name(members[i]),
                        states[i],
                        step,
                        dev,
                        size,
                        wall_s=share,
                    ),
                )
                states[i] = None  # type: ignore[call-overload]
            keep = [r for r in range(len(active)) if r not in set(stop)]
            if not keep:
                break
            go = torch.zeros(len(active), device=dev)
            go[keep] = 1.0
            for v in P.values():
                v.grad = None
            (losses * go).sum().backward()
            for pname, row in pad_rows:
                P[pname].grad[:, row] = 0.0
            step += 1
            with torch.no_grad():
                _adamw_step(
                    P,
                    exp_avg,
                    exp_avg_sq,
                    [lr[active[r]] for r in range(len(active))],
                    [wd[active[r]] for r in range(len(active))],
                    step,
                    dev,
                )
            if stop:
                idx = torch.tensor(keep, device=dev)
                active = [active[r] for r in keep]
                n_max = max(sizes[i] for i in active)
                P = {n: v.detach()[idx].requires_grad_(True) for n, v in P.items()}
                B = {n: v[idx] for n, v in B.items()}
                exp_avg = {n: v[idx] for n, v in exp_avg.items()}
                exp_avg_sq = {n: v[idx] for n, v in exp_avg_sq.items()}
                X, Y, M, N = X[idx, :n_max], Y[idx, :n_max], M[idx, :n_max], N[idx]
    finally:
        import shutil

        for s in states:
            if s is not None and s["tmp"].exists():
                shutil.rmtree(s["tmp"], ignore_errors=True)


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
    import torch

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
