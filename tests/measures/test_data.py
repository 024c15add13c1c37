"""SPEC 12's data-dependent measures (specbound.data_measures): closed forms on linear softmax
models, margins against the model's own forward pass, the bisection's edge cases, determinism,
bit-exact restoration and an independent Monte-Carlo check of the accuracy drop at σ*."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from specbound.errors import SpecboundError  # noqa: E402
from specbound.measures.data import DATA_MEASURES, data_measure_names  # noqa: E402
from specbound.track import data_measures  # noqa: E402

SEARCH = ["pacbayes_flatness", "pacbayes_mag_flatness", "sharpness", "sharpness_mag"]


def phi(x: np.ndarray) -> np.ndarray:
    """The standard normal CDF (math.erf, no scipy)."""
    return 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def binary_linear(seed: int = 0, m: int = 400, d: int = 4, scale: float = 1.0):
    """A 2-class linear model and data it fits perfectly (labels = its own argmax)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(m, d, generator=g, dtype=torch.float64)
    model = torch.nn.Linear(d, 2).double()
    with torch.no_grad():
        model.weight.copy_(scale * torch.randn(2, d, generator=g, dtype=torch.float64))
        model.bias.copy_(0.1 * scale * torch.randn(2, generator=g, dtype=torch.float64))
    y = model(x).argmax(1)
    return model, [(x[i : i + 100], y[i : i + 100]) for i in range(0, m, 100)]


def exact_gaussian_accuracy(model, batches, sigma: float, magnitude: bool) -> float:
    """E acc(w + u), u ~ N(0, σ²) (or N(0, σ² w² + ε²)) on every weight and bias, in closed
    form for two classes: the logit difference gets N(0, τ_0² + τ_1²) noise with
    τ_c² = Σ_j var(U_cj) x_j² + var(v_c), so P(correct) = Φ(margin / sqrt(τ_0² + τ_1²))."""
    w = model.weight.detach().numpy()
    b = model.bias.detach().numpy()
    x = torch.cat([bx for bx, _ in batches]).numpy()
    y = torch.cat([by for _, by in batches]).numpy()
    if magnitude:
        var_w, var_b = sigma**2 * w**2 + 1e-6, sigma**2 * b**2 + 1e-6
    else:
        var_w, var_b = np.full_like(w, sigma**2), np.full_like(b, sigma**2)
    tau2 = (x**2) @ var_w.T + var_b  # (m, 2)
    z = x @ w.T + b
    margin = np.abs(z[:, 0] - z[:, 1])  # every example is classified correctly at w
    assert (np.where(z[:, 0] >= z[:, 1], 0, 1) == y).all()
    return float(np.mean(phi(margin / np.sqrt(tau2.sum(1)))))


@pytest.mark.parametrize(
    ("name", "magnitude"), [("pacbayes_flatness", False), ("pacbayes_mag_flatness", True)]
)
def test_flatness_sigma_against_the_closed_form(name, magnitude):
    model, batches = binary_linear()
    r = data_measures(model, batches, measures=[name], seed=3)
    sigma = r.details[name]["sigma"]
    assert r[name] == pytest.approx(1 / sigma**2, rel=1e-15)
    assert r.details[name]["converged"] and abs(r.details[name]["deviation"] - 0.1) < 0.01
    assert r.train_accuracy == 1.0 and r.examples == 400 and r.draws == 10
    exact = 1.0 - exact_gaussian_accuracy(model, batches, sigma, magnitude)
    # M = 10 draws estimate the drop: the exact drop at σ* is near 0.1
    assert 0.06 <= exact <= 0.14, exact
    # and far from it one bisection step either way (σ*/2 and 2σ* miss the target)
    assert 1 - exact_gaussian_accuracy(model, batches, sigma / 2, magnitude) < 0.07
    assert 1 - exact_gaussian_accuracy(model, batches, sigma * 2, magnitude) > 0.13


def test_gaussian_closed_form_against_1e5_draws():
    """The closed form of the test itself, against 10^5 explicit noisy forward passes."""
    model, batches = binary_linear(m=100)
    x, y = batches[0]
    w, b = model.weight.detach(), model.bias.detach()
    g = torch.Generator().manual_seed(11)
    draws = 100_000
    u = 0.3 * torch.randn(draws, 2, 4, generator=g, dtype=torch.float64)
    v = 0.3 * torch.randn(draws, 2, generator=g, dtype=torch.float64)
    z = torch.einsum("md,kcd->kmc", x, w + u) + (b + v)[:, None, :]
    acc = (z.argmax(2) == y).double().mean().item()
    assert acc == pytest.approx(exact_gaussian_accuracy(model, batches, 0.3, False), abs=3e-3)


def test_sharpness_alpha_against_the_box_corner():
    """All inputs positive and one label: sign ascent walks every coordinate to the same corner
    of the box (u_w0 = -α, u_w1 = +α, bias alike) within 8 of the 10 steps, so the accuracy
    drop at α is exactly the share of examples with margin <= 2α(|x|_1 + 1)."""
    g = torch.Generator().manual_seed(5)
    x = torch.rand(300, 3, generator=g, dtype=torch.float64) + 0.1
    model = torch.nn.Linear(3, 2).double()
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]))
        model.bias.zero_()
    y = torch.zeros(300, dtype=torch.long)
    r = data_measures(model, [(x, y)], measures=["sharpness"], seed=0)
    alpha = r.details["sharpness"]["alpha"]
    margin = x.sum(1).numpy()
    exact = float(np.mean(margin <= 2 * alpha * (x.sum(1).numpy() + 1)))
    assert r.details["sharpness"]["deviation"] == pytest.approx(exact, abs=1e-12)
    assert abs(exact - 0.1) < 0.01 and r["sharpness"] == 1 / alpha**2


def test_margins_against_the_forward_pass():
    g = torch.Generator().manual_seed(2)
    model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 5))
    x = torch.randn(137, 6, generator=g)
    y = torch.randint(0, 5, (137,), generator=g)
    batches = [(x[:50], y[:50]), (x[50:], y[50:])]
    r = data_measures(model, batches, measures=["inverse_margin"])
    with torch.no_grad():
        logits = model(x).double().numpy()
    margins = []
    for row, label in zip(logits, y.numpy(), strict=True):
        others = [row[c] for c in range(5) if c != label]
        margins.append(row[label] - max(others))
    k = 137 // 10
    gamma = abs(sorted(margins)[k - 1])
    assert r.details["inverse_margin"] == {"gamma": pytest.approx(gamma, rel=1e-12), "k": k}
    assert r["inverse_margin"] == pytest.approx(1 / gamma**2, rel=1e-4)
    assert r.notes == {}


def tiny_bert(seed: int = 0):
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(seed)
    cfg = BertConfig(
        num_hidden_layers=1,
        hidden_size=16,
        num_attention_heads=2,
        intermediate_size=32,
        vocab_size=30,
        max_position_embeddings=8,
        num_labels=3,
    )
    return BertForSequenceClassification(cfg)


def bert_batches(n: int = 3, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    return [
        (
            {"input_ids": torch.randint(0, 30, (16, 6), generator=g)},
            torch.randint(0, 3, (16,), generator=g),
        )
        for _ in range(n)
    ]


def test_transformers_model_dict_inputs_and_margin_forms():
    pytest.importorskip("transformers")
    from specbound.analysis import analyze

    model = tiny_bert()
    batches = bert_batches()
    r = data_measures(model, batches, measures=data_measure_names()[4:], max_examples=40)
    assert r.examples == 40 and r.n == 48
    model.eval()  # the reference forward pass without dropout, as SPEC 12 evaluates
    with torch.no_grad():
        logits = torch.cat([model(**bx).logits for bx, _ in batches]).double()[:40]
    y = torch.cat([by for _, by in batches])[:40]
    true = logits[torch.arange(40), y]
    other = logits.clone()
    other[torch.arange(40), y] = -math.inf
    gamma = abs(float(torch.sort(true - other.max(1).values).values[3]))
    a = analyze(model, cache=False)
    lg = math.log10(gamma)
    want = {
        "inverse_margin": gamma**-2,
        "log_spectral_product_over_margin": a.measures["log_spectral_product"] - 2 * lg,
        "spectrum_adaptive_per_margin_sqrt_n": a.measures["spectrum_adaptive"]
        - lg
        - 0.5 * math.log10(48),
        "norm_based_per_margin_sqrt_n": a.measures["norm_based"] - lg - 0.5 * math.log10(48),
    }
    for name, v in want.items():
        assert r[name] == pytest.approx(v, rel=1e-6), name
    # n given: the margin forms use it; weights given as a mapping
    r2 = data_measures(
        model,
        batches,
        measures=["norm_based_per_margin_sqrt_n"],
        max_examples=40,
        n=1000,
        weights={"norm_based": 3.0},
    )
    assert r2["norm_based_per_margin_sqrt_n"] == pytest.approx(3.0 - lg - 1.5, rel=1e-6)


def test_margin_forms_without_weights_are_none_with_a_note():
    model, batches = binary_linear()
    r = data_measures(model, batches, measures=["inverse_margin", "norm_based_per_margin_sqrt_n"])
    assert r["inverse_margin"] is not None and r["norm_based_per_margin_sqrt_n"] is None
    assert "weights=" in r.notes["norm_based_per_margin_sqrt_n"]


class Offset(torch.nn.Module):
    """logits = x W + a fixed offset of 1e6 on class 0 (a buffer, never perturbed)."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.full((3, 2), 0.5))
        self.register_buffer("offset", torch.tensor([1e6, 0.0]))

    def forward(self, x):
        return x @ self.weight + self.offset


def test_accuracy_never_drops_sigma_at_the_upper_end():
    """A margin of 1e6 against parameter noise of at most 2 (or 2|w| + ε): no scale in [0, 2]
    drops the accuracy, so every bisection step raises the lower end: σ* = 2 - 2^-14, stated
    in details and notes."""
    x = torch.randn(100, 3, generator=torch.Generator().manual_seed(0))
    model = Offset()
    r = data_measures(model, [(x, torch.zeros(100, dtype=torch.long))], measures=SEARCH)
    for name in SEARCH:
        d = r.details[name]
        scale = d.get("sigma", d.get("alpha"))
        assert scale == 2 - 2**-14 and d["steps"] == 15 and not d["converged"], name
        assert d["at_end"] == "upper" and d["deviation"] == 0.0
        assert r[name] == 1 / (2 - 2**-14) ** 2
        assert "upper end" in r.notes[name]


def test_accuracy_drops_at_any_sigma_sigma_at_the_lower_end():
    """Zero weights: every logit ties (argmax: class 0, every label 0, accuracy 1); any noise
    makes the prediction a coin flip, so the drop exceeds 0.1 at every σ: σ* = 2^-14."""
    x = torch.randn(200, 3, generator=torch.Generator().manual_seed(0))
    model = torch.nn.Linear(3, 2)
    with torch.no_grad():
        model.weight.zero_()
        model.bias.zero_()
    y = torch.zeros(200, dtype=torch.long)
    r = data_measures(model, [(x, y)], measures=SEARCH)
    assert r.train_accuracy == 1.0
    for name in SEARCH:
        d = r.details[name]
        assert d.get("sigma", d.get("alpha")) == 2**-14 and d["at_end"] == "lower", name
        assert d["deviation"] > 0.11 and r[name] == 2.0**28
        assert "lower end" in r.notes[name]


def snapshot(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def test_deterministic_restored_and_global_rng_untouched():
    model = tiny_bert(seed=4)
    model.train()
    model.bert.encoder.eval()  # a mixed mode must come back as it was
    model.classifier.weight.requires_grad_(False)
    model.bert.pooler.dense.weight.grad = torch.ones_like(model.bert.pooler.dense.weight)
    before = snapshot(model)
    torch.manual_seed(123)
    rng = torch.random.get_rng_state()
    batches = bert_batches()
    r1 = data_measures(model, batches, seed=7)
    assert torch.equal(torch.random.get_rng_state(), rng)
    r2 = data_measures(model, batches, seed=7)
    assert dict(r1) == dict(r2) and r1.details == r2.details
    after = snapshot(model)
    assert before.keys() == after.keys()
    for k in before:
        assert torch.equal(before[k], after[k]), k
    assert model.training and not model.bert.encoder.training and model.bert.pooler.training
    assert (
        not model.classifier.weight.requires_grad
        and model.bert.embeddings.word_embeddings.weight.requires_grad
    )
    assert torch.equal(
        model.bert.pooler.dense.weight.grad, torch.ones_like(model.bert.pooler.dense.weight)
    )
    assert model.bert.encoder.layer[0].attention.self.query.weight.grad is None
    # another seed: other draws (the flatness values differ somewhere)
    r3 = data_measures(model, batches, seed=8, measures=SEARCH[:2])
    assert r3.seed == 8 and r3.details != {k: r1.details[k] for k in SEARCH[:2]}
    # one measure alone gives the value it has in the full call (independent streams)
    r4 = data_measures(model, batches, seed=7, measures=["sharpness_mag"])
    assert r4["sharpness_mag"] == r1["sharpness_mag"]


def mlp_task(seed: int = 0):
    """A small MLP trained to fit 256 noisy examples (training accuracy near 1)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(256, 8, generator=g)
    y = (x[:, :3].sum(1) > 0).long() + (x[:, 3] > 1).long()
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 3))
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    for _ in range(200):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return model, [(x[:128], y[:128]), (x[128:], y[128:])]


@pytest.mark.parametrize(
    ("name", "magnitude"), [("pacbayes_flatness", False), ("pacbayes_mag_flatness", True)]
)
def test_independent_monte_carlo_at_sigma_star(name, magnitude):
    """Our own 60 draws with another seed, sharing no code with the package: the training
    accuracy drop at σ* lies in [0.04, 0.18]."""
    model, batches = mlp_task()
    r = data_measures(model, batches, measures=[name], seed=0)
    sigma = r.details[name]["sigma"]
    x = torch.cat([b[0] for b in batches])
    y = torch.cat([b[1] for b in batches])
    params = list(model.parameters())
    w0 = [p.detach().clone() for p in params]
    with torch.no_grad():
        acc0 = (model(x).argmax(1) == y).float().mean().item()
        g = torch.Generator().manual_seed(98765)
        accs = []
        for _ in range(60):
            for p, w in zip(params, w0, strict=True):
                std = (sigma**2 * w**2 + 1e-6).sqrt() if magnitude else sigma
                p.copy_(w + std * torch.randn(w.shape, generator=g))
            accs.append((model(x).argmax(1) == y).float().mean().item())
        for p, w in zip(params, w0, strict=True):
            p.copy_(w)
    drop = acc0 - float(np.mean(accs))
    assert acc0 == r.train_accuracy and acc0 > 0.9
    assert 0.04 <= drop <= 0.18, drop


def test_perturb_matrices_touches_only_the_weight_matrices():
    import re

    from specbound.measures.data._common import perturbed_parameters

    model = tiny_bert()
    names = {k for k, _ in perturbed_parameters(model, "matrices")}
    raw = re.compile(
        r"bert\.encoder\.layer\.0\.(attention\.self\.(query|key|value)|attention\.output\.dense|"
        r"intermediate\.dense|output\.dense)\.weight$"
    )
    assert names == {k for k, _ in model.named_parameters() if raw.search(k)} and len(names) == 6
    everything = {k for k, _ in perturbed_parameters(model, "all")}
    assert everything == {k for k, _ in model.named_parameters()}
    r = data_measures(model, bert_batches(), measures=SEARCH[:1], perturb="matrices")
    assert r.perturb == "matrices"


def test_logits_fn_and_output_that_is_not_logits():
    model, batches = binary_linear()

    class Wrapped(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            return {"scores": self.inner(x)}

    w = Wrapped(model)
    with pytest.raises(SpecboundError, match="logits_fn"):
        data_measures(w, batches, measures=["inverse_margin"])
    r = data_measures(
        w, batches, measures=["inverse_margin"], logits_fn=lambda m, x: m(x)["scores"]
    )
    assert (
        r["inverse_margin"]
        == data_measures(model, batches, measures=["inverse_margin"])["inverse_margin"]
    )


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"measures": ["flatness"]}, "unknown data measure"),
        ({"max_examples": 0}, "max_examples"),
        ({"max_examples": 2.5}, "max_examples"),
        ({"seed": -1}, "seed"),
        ({"perturb": "some"}, "perturb"),
        ({"n": 0}, "n must"),
        ({"batches": [(torch.zeros(3, 4), torch.zeros(3))]}, "class indices"),
        ({"batches": [(torch.zeros(3, 4), torch.zeros(2, dtype=torch.long))]}, "3 inputs"),
        ({"batches": [torch.zeros(3, 4)]}, "pair"),
        ({"batches": torch.zeros(3, 4)}, "iterable"),
        ({"batches": []}, "no examples"),
        ({"batches": [(torch.zeros(3, 4).double(), torch.full((3,), 7))]}, "class indices in 0..1"),
    ],
)
def test_bad_input_is_one_line(kw, match):
    model, batches = binary_linear(d=4)
    kw = dict(kw)
    b = kw.pop("batches", batches)
    with pytest.raises(SpecboundError, match=match) as e:
        data_measures(model, b, **{"measures": ["inverse_margin"], **kw})
    assert "\n" not in str(e.value)


def test_registry_and_no_torch_at_import():
    assert list(DATA_MEASURES) == [
        "pacbayes_flatness",
        "pacbayes_mag_flatness",
        "sharpness",
        "sharpness_mag",
        "inverse_margin",
        "log_spectral_product_over_margin",
        "spectrum_adaptive_per_margin_sqrt_n",
        "norm_based_per_margin_sqrt_n",
    ]
    code = (
        "import sys, specbound, specbound.measures.data, specbound.track; "
        "assert callable(specbound.data_measures); print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
