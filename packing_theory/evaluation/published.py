"""Seed 000's published figures, fed through the library's contrast and ranking code (a worked reproduction).

Job: hold the per-condition numbers seed 000 prints (§5.3, §5.4, §5.5 and
§5.8 tables, as printed, cited by section and table) and recompute from them
every published number that is a *difference of published numbers* — the
same-seed deltas, the tail-minus-prefix interactions, the census contrasts,
the Bonferroni level of the declared family — and every published ordering,
with the library's own code: :func:`~packing_theory.evaluation.family.contrast_value`
(the arithmetic the bootstrap runs), :func:`~packing_theory.evaluation.family.family_of_pairs`
with :func:`~packing_theory.evaluation.family.bonferroni_quantiles`, and
:func:`~packing_theory.evaluation.ranking.rank` /
:func:`~packing_theory.evaluation.ranking.reversals`. Imports: this package's
family and ranking modules.

*Agreement to the printed precision*: a published difference printed with
``d`` decimals, computed from ``n`` inputs printed with ``d_i`` decimals,
agrees when ``|computed − published| <= 0.5·10^-d + Σ 0.5·10^-d_i`` — the
rounding of the printed value plus the rounding of each printed input (the
paper subtracted unrounded scores: 1.00384198 − 0.99425177 = 0.00959021 is
printed +0.00959020).

What cannot be reproduced without the checkpoints (or the supplement's
per-source and per-row losses): every bootstrap interval (§5.5's 99.375 %
intervals, §5.7's 95 % intervals), the §5.6 prefix ranking check (seven
checkpoints, of which §5.3 prints two; no prefix score is printed), the
§5.7 natural-context deltas (no per-condition score is printed), and the
census aggregates themselves (§5.8 prints them; recomputing them needs the
nine checkpoints).

>>> checks = reproduce()
>>> len(checks), all(c.agrees for c in checks)
(49, True)
>>> [(c.published, c.computed) for c in checks if c.what.startswith("Bonferroni")]
[('99.375%', '99.375%')]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from .family import bonferroni_quantiles, contrast_value, family_of_pairs
from .ranking import rank, reversals

__all__ = [
    "CENSUS_CONTRASTS",
    "CENSUS_SCORES",
    "CONFIRMATION",
    "DEVELOPMENT",
    "DEVELOPMENT_DELTAS",
    "POSITION_DECOMPOSITION",
    "SAME_SEED_PAIRS",
    "WINDOW_CONTRASTS",
    "PublishedCheck",
    "reproduce",
    "reproduction_table",
]

DEVELOPMENT: dict[str, str] = {
    "baseline_s43": "0.99370935", "random_crop_s43": "0.99550330", "segmented_s43": "1.00293320",
    "baseline_s44": "0.99559622", "random_crop_s44": "0.99590521", "segmented_s44": "1.00649258",
}
"""§5.3 table, "Official BPB" of the six central runs (development)."""

DEVELOPMENT_DELTAS: dict[tuple[str, str], str] = {
    ("random_crop_s43", "baseline_s43"): "0.001794", ("random_crop_s44", "baseline_s44"): "0.000309",
    ("segmented_s43", "baseline_s43"): "0.009224", ("segmented_s44", "baseline_s44"): "0.010896",
}
"""§5.3 text: "Random spans worsen official BPB by 0.001794 at seed 43 but only 0.000309 at seed 44
... Segment first worsens it by 0.009224 and 0.010896"."""

CONFIRMATION: dict[str, tuple[str, str]] = {
    "baseline_s43": ("0.99425177", "+0.00000000"), "random_crop_s43": ("0.99608374", "+0.00183197"),
    "segmented_s43": ("1.00384198", "+0.00959020"), "baseline_s44": ("0.99616274", "+0.00000000"),
    "random_crop_s44": ("0.99652583", "+0.00036309"), "segmented_s44": ("1.00712418", "+0.01096144"),
}
"""§5.4 table: (BPB, "Delta vs same-seed control") of the frozen original-style confirmation."""

SAME_SEED_PAIRS: tuple[tuple[str, str], ...] = (
    ("random_crop_s43", "baseline_s43"), ("segmented_s43", "baseline_s43"),
    ("random_crop_s44", "baseline_s44"), ("segmented_s44", "baseline_s44"),
)
"""The interventions and their same-seed controls (§5.4, §5.5)."""

WINDOW_CONTRASTS: tuple[tuple[str, str, str, str, str, str], ...] = (
    ("random_crop_s43", "4097–8192", "+0.001623", "-0.009031", "-0.010654", "[-0.014933, -0.006802]"),
    ("segmented_s43", "4097–8192", "+0.005745", "-0.006486", "-0.012230", "[-0.017320, -0.007555]"),
    ("random_crop_s43", "8193–16384", "+0.005389", "-0.003160", "-0.008549", "[-0.013126, -0.004825]"),
    ("segmented_s43", "8193–16384", "+0.001987", "-0.008230", "-0.010217", "[-0.016628, -0.004889]"),
    ("random_crop_s44", "4097–8192", "+0.001029", "-0.007496", "-0.008525", "[-0.011939, -0.005427]"),
    ("segmented_s44", "4097–8192", "+0.006887", "-0.004329", "-0.011217", "[-0.015877, -0.007197]"),
    ("random_crop_s44", "8193–16384", "+0.004135", "-0.004835", "-0.008970", "[-0.013418, -0.005178]"),
    ("segmented_s44", "8193–16384", "+0.003027", "-0.006518", "-0.009545", "[-0.016338, -0.004240]"),
)
"""§5.5 confirmation table: (condition, stratum, prefix delta, tail delta, tail minus prefix,
99.375 % interval)."""

POSITION_DECOMPOSITION: tuple[tuple[str, str, str, str, str], ...] = (
    ("random_crop_s43", "4097–8192", "-0.007723", "-0.001444", "-0.005366"),
    ("segmented_s43", "4097–8192", "-0.006072", "-0.001560", "-0.004082"),
    ("random_crop_s43", "8193–16384", "-0.006437", "-0.001683", "-0.004088"),
    ("segmented_s43", "8193–16384", "-0.011515", "-0.002427", "-0.007220"),
    ("random_crop_s44", "4097–8192", "-0.008682", "-0.001729", "-0.005378"),
    ("segmented_s44", "4097–8192", "-0.005020", "-0.001526", "-0.003167"),
    ("random_crop_s44", "8193–16384", "-0.008163", "-0.001749", "-0.005011"),
    ("segmented_s44", "8193–16384", "-0.009899", "-0.002134", "-0.006109"),
)
"""§5.5 development position decomposition: (condition, stratum, full tail delta, contribution of the
first 128 positions, contribution after 512); the text gives the shares as 61–70 % and 18–31 %."""

CENSUS_SCORES: dict[str, tuple[str, str]] = {
    "baseline_s43": ("0.99370935", "1.01106188"), "random_crop_s43": ("0.99550330", "1.01163322"),
    "segmented_s43": ("1.00293320", "1.01825970"), "baseline_s44": ("0.99559622", "1.01236209"),
    "random_crop_s44": ("0.99590521", "1.01201881"), "segmented_s44": ("1.00649258", "1.02125678"),
    "seg_seqshuffle16_s43": ("1.00113970", "1.01581091"),
    "seg_batchshuffle16_s43": ("1.00305409", "1.01890774"),
    "base_seqshuffle16_s43": ("0.99464163", "1.01236301"),
}
"""§5.8 census table: (official BPB, whole-source BPB) of the nine checkpoints."""

CENSUS_CONTRASTS: tuple[tuple[str, str, str, str], ...] = (
    ("random_crop_s43", "baseline_s43", "+0.00179396", "+0.00057134"),
    ("segmented_s43", "baseline_s43", "+0.00922385", "+0.00719783"),
    ("random_crop_s44", "baseline_s44", "+0.00030899", "-0.00034328"),
    ("segmented_s44", "baseline_s44", "+0.01089635", "+0.00889470"),
    ("seg_seqshuffle16_s43", "segmented_s43", "-0.00179349", "-0.00244880"),
    ("seg_batchshuffle16_s43", "segmented_s43", "+0.00012090", "+0.00064804"),
    ("seg_seqshuffle16_s43", "seg_batchshuffle16_s43", "-0.00191439", "-0.00309683"),
    ("base_seqshuffle16_s43", "baseline_s43", "+0.00093228", "+0.00130113"),
    ("seg_seqshuffle16_s43", "base_seqshuffle16_s43", "+0.00649807", "+0.00344790"),
)
"""§5.8 contrast table: (model, baseline, official ΔBPB, whole-source ΔBPB)."""


@dataclass(frozen=True, slots=True)
class PublishedCheck:
    """One published number or ordering, and what the library computes from the published inputs.

    Attributes:
        where: section and table of the published number.
        what: what it is.
        published: as printed.
        computed: the library's value (a number, or the ordering / sign pattern as text).
        tolerance: the printed-precision bound (0 for an exact comparison).
        agrees: within the bound (or equal).
    """

    where: str
    what: str
    published: str
    computed: str
    tolerance: float
    agrees: bool

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"where": self.where, "what": self.what, "published": self.published,
                "computed": self.computed, "tolerance": self.tolerance, "agrees": self.agrees}


def _decimals(text: str) -> int:
    exp = Decimal(text.strip()).as_tuple().exponent
    assert isinstance(exp, int)
    return -exp


def _number(where: str, what: str, published: str, computed: float, inputs: Sequence[str]) -> PublishedCheck:
    tol = 0.5 * 10.0 ** -_decimals(published) + sum(0.5 * 10.0 ** -_decimals(x) for x in inputs)
    d = max(_decimals(x) for x in (published, *inputs))
    ok = abs(computed - float(published)) <= tol * (1 + 1e-9)
    return PublishedCheck(where, what, published, f"{computed:+.{d}f}", tol, ok)


def _fact(where: str, what: str, published: str, computed: str) -> PublishedCheck:
    return PublishedCheck(where, what, published, computed, 0.0, published == computed)


def _delta(table: Mapping[str, str], model: str, baseline: str) -> float:
    return contrast_value(lambda m, _k: float(table[m]), model, baseline, "official")[0]


def _deltas() -> list[PublishedCheck]:
    out: list[PublishedCheck] = []
    for (m, b), printed in DEVELOPMENT_DELTAS.items():
        out.append(_number("§5.3 text", f"official ΔBPB {m} − {b} (development)", printed,
                           _delta(DEVELOPMENT, m, b), (DEVELOPMENT[m], DEVELOPMENT[b])))
    conf = {k: v[0] for k, v in CONFIRMATION.items()}
    for m, (_, printed) in CONFIRMATION.items():
        b = "baseline_s43" if m.endswith("s43") else "baseline_s44"
        out.append(_number("§5.4 table", f"confirmation ΔBPB {m} − {b}", printed, _delta(conf, m, b),
                           (conf[m], conf[b])))
    for m, b, official, whole in CENSUS_CONTRASTS:
        for col, printed, j in (("official", official, 0), ("whole-source", whole, 1)):
            tab = {k: v[j] for k, v in CENSUS_SCORES.items()}
            out.append(_number("§5.8 contrast table", f"{col} ΔBPB {m} − {b}", printed, _delta(tab, m, b),
                               (tab[m], tab[b])))
    return out


def _lookup(deltas: Mapping[tuple[str, str], float]) -> Callable[[str, str], float]:
    """``bpb(model, kind)`` of a table of deltas: the baseline's own delta is 0."""
    return lambda m, k: deltas.get((m, k), 0.0)


def _windows() -> list[PublishedCheck]:
    out: list[PublishedCheck] = []
    for m, stratum, prefix, tail, printed, _interval in WINDOW_CONTRASTS:
        deltas = {(m, "tail"): float(tail), (m, "beginning"): float(prefix)}
        value = contrast_value(_lookup(deltas), m, "same-seed baseline", "tail",
                               "beginning")[0]  # the baseline's own delta is 0
        out.append(_number("§5.5 table", f"tail minus prefix {m}, {stratum}", printed, value, (prefix, tail)))
    signs = "".join("+" if float(r[2]) > 0 else "−" for r in WINDOW_CONTRASTS)
    out.append(_fact("§5.5 text", "beginning deltas positive (8 of 8)", "+" * 8, signs))
    negatives = sum(float(r[3]) < 0 for r in WINDOW_CONTRASTS) + sum(float(r[4]) < 0
                                                                      for r in WINDOW_CONTRASTS)
    out.append(_fact("§5.5 text", "tail deltas and interactions negative (16 of 16)", "16", str(negatives)))
    size = family_of_pairs(SAME_SEED_PAIRS).size
    out.append(_fact("§5.5 text", f"Bonferroni level of the {size} declared same-seed contrasts", "99.375%",
                     f"{100 * bonferroni_quantiles(0.95, size)[2]:g}%"))
    late = [float(r[4]) / float(r[2]) for r in POSITION_DECOMPOSITION]
    early = [float(r[3]) / float(r[2]) for r in POSITION_DECOMPOSITION]
    for what, shares, printed in (("share after 512", late, "61–70%"),
                                  ("share of the first 128", early, "18–31%")):
        got = f"{math.floor(100 * min(shares))}–{math.ceil(100 * max(shares))}%"
        out.append(_fact("§5.5 decomposition", f"{what} across the eight tail cells", printed, got))
    return out


def _orderings() -> list[PublishedCheck]:
    out: list[PublishedCheck] = []
    conf = {k: float(v[0]) for k, v in CONFIRMATION.items()}
    dev = {k: float(v) for k, v in DEVELOPMENT.items()}
    for seed in ("s43", "s44"):
        names = [f"baseline_{seed}", f"random_crop_{seed}", f"segmented_{seed}"]
        d = {n: dev[n] for n in names}
        c = {n: conf[n] for n in names}
        expected = ", ".join(names)
        out.append(_fact("§5.3 table", f"development ordering at seed {seed[1:]}", expected,
                         ", ".join(rank(d))))
        out.append(_fact("§5.4 table", f"confirmation ordering at seed {seed[1:]}", expected,
                         ", ".join(rank(c))))
        out.append(_fact("§5.4 text", f"same-seed ordering unchanged from development, seed {seed[1:]} "
                         f"(reversals)", "0", str(len(reversals(d, c)))))
    whole = {k: float(v[1]) for k, v in CENSUS_SCORES.items()}
    worse = [_delta({k: str(v) for k, v in whole.items()}, f"segmented_{s}", f"baseline_{s}") > 0
             for s in ("s43", "s44")]
    out.append(_fact("§5.8 text", "segment-first worse on the whole-source census at both seeds", "True True",
                     " ".join(str(w) for w in worse)))
    mixed = [_delta({k: str(v) for k, v in whole.items()}, f"random_crop_{s}", f"baseline_{s}") > 0
             for s in ("s43", "s44")]
    out.append(_fact("§5.8 text", "random spans mixed on the census (worse at 43, better at 44)",
                     "True False",
                     " ".join(str(w) for w in mixed)))
    return out


def reproduce() -> tuple[PublishedCheck, ...]:
    """Every published difference and ordering recomputed from the published inputs (see the module doc)."""
    return tuple(_deltas() + _windows() + _orderings())


def reproduction_table(checks: Sequence[PublishedCheck] | None = None) -> str:
    """The checks as a Markdown table."""
    rows = ["| where | what | published | computed | agrees |", "|---|---|---:|---:|---|"]
    for c in checks if checks is not None else reproduce():
        ok = "yes" if c.agrees else "NO"
        rows.append(f"| {c.where} | {c.what} | {c.published} | {c.computed} | {ok} |")
    return "\n".join(rows)
