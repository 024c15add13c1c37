"""The fixed text of every report page: its CSS, its few lines of JS (sortable tables, pager),
the column labels in words and the glossary (term -> definition). :mod:`.html` re-exports them."""

from __future__ import annotations

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;
max-width:1180px;padding:1.2em 1.6em;color:#1b1b1f;line-height:1.45}
h1{font-size:1.55em;margin:.2em 0 .4em;overflow-wrap:anywhere}h2{font-size:1.2em;
margin-top:1.6em;border-bottom:1px solid #ddd;padding-bottom:.2em}
.answer{background:#f3f6fb;border-left:4px solid #3b6fb6;padding:.7em 1.1em;margin:.6em 0 1.2em}
.answer p{margin:.45em 0}.warn{color:#8a4b00}.lead{font-size:1.08em}
.bounds{display:flex;gap:2em;flex-wrap:wrap;margin:.3em 0 .6em}
.bound{font-size:1.0em}.bound b{font-size:1.15em}
figure{margin:1.4em 0}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:.9em;color:#444;max-width:60em}
.tw{overflow:auto;margin:.5em 0 1em;border:1px solid #ddd;max-width:100%;
width:max-content}
table{border-collapse:separate;border-spacing:0;font-size:.85em}
th,td{border-right:1px solid #e3e3e3;border-bottom:1px solid #e3e3e3;padding:.25em .55em;
text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
th{background:#eef1f5;cursor:pointer;user-select:none;position:sticky;top:0;z-index:1;
white-space:normal;vertical-align:bottom;min-width:3.5em;max-width:10em;font-weight:600}
th.asc:after{content:" \\25B2"}th.desc:after{content:" \\25BC"}
td.txt,th.txt{text-align:left}tr:nth-child(even) td{background:#fafafa}
td.txt{white-space:normal;max-width:34em;overflow-wrap:break-word}td.verdict{min-width:10em}
.note{color:#555;font-size:.9em}
dl.gloss{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em;font-size:.9em}
dl.gloss dt{font-weight:600}dl.gloss dd{margin:0}
.pager{font-size:.9em;margin:.2em 0}.pager button{margin-right:.4em}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(360px,1fr));gap:.6em}
.grid figure img{max-width:min(100%,560px)}
.grid figure{margin:.2em 0}.bad{color:#a4262c}
table.sticky1 tbody td:first-child{position:sticky;left:0;z-index:1;background:#fff;
box-shadow:inset -1px 0 0 #bbb}
table.sticky1 tbody tr:nth-child(even) td:first-child{background:#fafafa}
table.sticky1 thead th:first-child{position:sticky;left:0;z-index:3;box-shadow:inset -1px 0 0 #bbb}
.fit{max-width:100%;overflow-x:auto}table.primary{width:100%}
table.primary td,table.primary th{white-space:normal;overflow-wrap:anywhere}
table.primary th{overflow-wrap:normal;hyphens:auto}
table.primary td.verdict{min-width:7.5em;overflow-wrap:normal}code{overflow-wrap:anywhere}
tr:target td{background:#fff3c4}details>summary{cursor:pointer;font-weight:600}
a{color:#2a5a9e}.files{font-size:.9em}.files a{margin-right:.7em}
"""

JS = """
document.querySelectorAll('table.sortable').forEach(function(t){
  t.querySelectorAll('th').forEach(function(th,i){
    th.addEventListener('click',function(){
      var b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows);
      var asc=!th.classList.contains('asc');
      t.querySelectorAll('th').forEach(function(h){h.classList.remove('asc','desc');});
      th.classList.add(asc?'asc':'desc');
      rows.sort(function(r1,r2){
        var a=r1.cells[i].getAttribute('data-v'),c=r2.cells[i].getAttribute('data-v');
        var x=parseFloat(a),y=parseFloat(c);
        var d=(!isNaN(x)&&!isNaN(y))?x-y:String(a).localeCompare(String(c),undefined,
          {numeric:true});
        return asc?d:-d;});
      rows.forEach(function(r){b.appendChild(r);});
      if(t.pager){t.pager(0);}
    });
  });
});
document.querySelectorAll('table.paged').forEach(function(t){
  var size=parseInt(t.getAttribute('data-page'),10),p=t.previousElementSibling,cur=0;
  var info=p.querySelector('span');
  t.pager=function(k){var rows=t.tBodies[0].rows,n=Math.max(1,Math.ceil(rows.length/size));
    cur=Math.min(Math.max(k,0),n-1);
    for(var i=0;i<rows.length;i++){rows[i].style.display=
      (i>=cur*size&&i<(cur+1)*size)?'':'none';}
    info.textContent='rows '+(cur*size+1)+'-'+Math.min(rows.length,(cur+1)*size)+
      ' of '+rows.length+' (page '+(cur+1)+' of '+n+')';};
  p.querySelector('.prev').addEventListener('click',function(){t.pager(cur-1);});
  p.querySelector('.next').addEventListener('click',function(){t.pager(cur+1);});
  p.querySelector('.all').addEventListener('click',function(){
    var rows=t.tBodies[0].rows;for(var i=0;i<rows.length;i++){rows[i].style.display='';}
    info.textContent='all '+rows.length+' rows';});
  t.pager(0);
});
"""

#: Column labels in words; any other column shows its name with spaces for underscores.
#: The depth factor is ``depth_factor`` (SPEC's alpha(l)); "alpha" alone is WeightWatcher's.
LABELS = {
    "matrix_type": "type",
    "p_star": "p*",
    "contribution": "contribution c*",
    "log10_contribution": "log10 c*",
    "spectral_norm": "spectral norm",
    "frobenius_norm": "Frobenius norm",
    "nuclear_norm": "nuclear norm",
    "norm_21": "(2,1) norm",
    "norm_11": "(1,1) norm",
    "stable_rank": "stable rank",
    "log10_alpha": "log10 depth_factor",
    "alpha": "depth_factor",
    "depth_factor": "depth_factor",
    "log10_depth_factor": "log10 depth_factor",
    "scale": "scale s",
    "log10_scale": "log10 s",
    "log10_xi": "log10 xi",
    "contribution_total": "c* total",
    "n_p0": "p*=0 (count)",
    "n_p2": "p*=2 (count)",
    "mean_p_star": "mean p*",
    "num_layers": "L",
    "hidden_size": "N",
    "num_heads": "H",
    "intermediate_size": "F",
    "num_parameters": "parameters",
    "spectrum_adaptive_log10": "log10 B spectrum-adaptive",
    "norm_based_log10": "log10 B norm-based",
    "share_p0": "share p*=0",
    "spectrum_adaptive_share_p0": "share p*=0",
    "spectrum_adaptive_ceiling_gap": "ceiling gap (log10)",
    "log10_spectrum_adaptive_ceiling": "log10 ceiling",
    "spectrum_adaptive": "spectrum-adaptive (log10 B)",
    "norm_based": "norm-based (log10 B)",
    "share_p2": "share p*=2",
    "fixed_axis": "fixed axis",
    "fixed_value": "fixed value",
    "exponent_se": "exponent SE",
    "log10_per_unit": "log10 per unit",
    "log10_per_unit_se": "per unit SE",
    "n_points": "models",
    "htsr_alpha": "HTSR alpha",
    "htsr_alpha_weighted": "HTSR alpha weighted",
    "htsr_xmin": "HTSR x_min",
    "htsr_D": "HTSR D",
    "htsr_num_tail": "HTSR tail size",
    "htsr_fit": "HTSR fit",
    "htsr_fit_reason": "HTSR fit reason",
    "htsr_fits": "HTSR fits",
    "htsr_alpha_ok": "HTSR alpha (ok fits)",
    "htsr_alpha_fits_used": "ok fits used",
    "htsr_alpha_weighted_ok": "HTSR alpha weighted (ok fits)",
    "htsr_alpha_weighted_fits_used": "ok fits used (weighted)",
    **{f"contribution_{t}": f"c* {t}" for t in ("QK", "OV", "M_in", "M_out")},
    # track.csv's per-matrix-type columns
    **{f"{t}_mean_p_star": f"{t} mean p*" for t in ("QK", "OV", "M_in", "M_out")},
    **{f"{t}_share_p0": f"{t} share p*=0" for t in ("QK", "OV", "M_in", "M_out")},
    **{f"{t}_contribution": f"{t} c*" for t in ("QK", "OV", "M_in", "M_out")},
}

#: The glossary shown on every page (term, meaning).
GLOSSARY = (
    (
        "proxy",
        "a leading factor of a generalization bound with its constants dropped (SPEC 4-5); "
        "a proxy is not a bound on the test error and its absolute value means little",
    ),
    (
        "p*",
        "the exponent in {0, 1/m, ..., 2} that minimizes a matrix's contribution c(A, p); "
        "p* = 0 charges the matrix by its rank only",
    ),
    (
        "grid m",
        "p runs over the grid {0, 1/m, 2/m, ..., 2}; m = ceil(L + ln N) by default (SPEC 4)",
    ),
    ("c*", "a matrix's contribution at its p*; B sums them over all matrices"),
    (
        "L_phi",
        "the Lipschitz constant of the activation (1.13 for GELU, 1 for ReLU), a factor "
        "of every depth_factor",
    ),
    (
        "depth_factor",
        "alpha(l) of SPEC 4: the product over the layers above l, which multiplies "
        "every matrix scale of layer l; log10_depth_factor is its log10 (not HTSR's alpha)",
    ),
    (
        "xi",
        "xi(l): the norm-based proxy's per-layer sum of (2,1) norms to the power 2/3 "
        "(SPEC 5); log10 xi is its log10",
    ),
    (
        "ceiling",
        "the rank ceiling sum_A sqrt(r(A) N) + sqrt(L): the spectrum-adaptive value when "
        "every matrix picks p* = 0, the same for any full-rank checkpoint of that shape; "
        "ceiling gap = log10 ceiling - log10 B (0 = at the ceiling)",
    ),
    ("HTSR alpha", "WeightWatcher's power-law exponent of the eigenvalues of W^T W (SPEC 9)"),
    (
        "HTSR x_min",
        "the eigenvalue of W^T W where the fitted power-law tail starts: the candidate that "
        "minimizes HTSR D (SPEC 9)",
    ),
    (
        "HTSR tail size",
        "the number of eigenvalues at or above x_min that the power law is fitted to; a fit on a "
        "short tail (a few eigenvalues) is noisy",
    ),
    (
        "HTSR D",
        "the Kolmogorov-Smirnov distance between the tail's empirical distribution and the "
        "fitted power law (0 = a perfect fit; the fit picks the x_min with the smallest D)",
    ),
    (
        "SE",
        "standard error: the OLS standard error of a fitted slope, written value ± SE (SE); "
        "undefined without residual degrees of freedom",
    ),
    (
        "resid df",
        "residual degrees of freedom of a fit: points minus fitted parameters; below 2 the SE "
        "rests on at most one residual and the line is flagged",
    ),
    (
        "not shown to differ",
        "two slopes within max(2, t_0.975(df)) combined SEs of each other: this grid cannot "
        "tell them apart; it is not evidence that they are equal",
    ),
    ("τ", "Kendall's tau-b between a measure and the generalization gap over all models"),
    (
        "Ψ",
        "granulated Kendall (Jiang et al.): per axis, the mean pairwise tau over groups of models "
        "that share every other axis value; Ψ averages the axes",
    ),
    (
        "τ_n",
        "tau within strata of equal training-set size n, averaged: what a measure adds once n is "
        "known (tau_fixed_n in the CSVs)",
    ),
    (
        "CMI",
        "Jiang's conditional mutual information between the signs of Δmeasure and Δgap, minimized "
        "over sets of at most two axes (0 = no information)",
    ),
    (
        "sign-error",
        "over pairs of models that differ in one axis, the share where the measure moves against "
        "the gap (0.5 = chance)",
    ),
    ("configuration", "one value of every axis; its models are its seeds (the replicates)"),
    ("_per_sqrt_n", "a bound form log10 B - ½ log10 n: it contains the sample size itself"),
    ("p", "the bootstrap p-value of a difference over its B paired draws"),
    ("p_holm", "p adjusted by Holm's step-down method over the primary rows (P1-P3)"),
    ("q_bh", "p adjusted by Benjamini-Hochberg over the exploratory rows of the table"),
    (
        "borderline",
        "the adjusted figure is within 2 Monte Carlo errors of 0.05: no verdict either way",
    ),
    (
        "insufficient evidence",
        "fewer than 8 configurations, fewer than 1000 draws or (for τ_n) fewer than 2 strata of "
        "n with 3 configurations: no verdict word is given",
    ),
    (
        "not comparable",
        "the comparison cannot mean anything (a baseline constant on an axis, or undefined "
        "within fixed n): never a win",
    ),
    (
        "half-change step",
        "the first step at which a series had covered half of its net change from the first to "
        "the last evaluation; undefined when the series does not move (see trajectory page)",
    ),
    (
        "share p*=0",
        "the share of matrices whose p* is 0 (charged by their rank only); at 100% the "
        "spectrum-adaptive value is the rank ceiling",
    ),
    (
        "undefined",
        "a value that could exist but does not here (e.g. distance_from_init without an init "
        "checkpoint, a statistic with no pair to compare)",
    ),
    (
        "n/a",
        "not applicable: the cell has no meaning for its row (a feed-forward matrix has no head)",
    ),
)
