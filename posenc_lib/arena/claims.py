"""The papers' direction: what each method's paper claims about lengths, and whether the arena's table agrees.

A claim is a direction on one of the table's columns (`measure`, e.g. "loss_8L"), either against another method
of the arena (`compared_with`, e.g. "rope") or against the method's own column `reference` (an absolute claim,
e.g. its loss at 8L against its loss at L):

    d = method[measure] - compared_with[measure]      or      d = method[measure] - method[reference]
    lower   the paper says d < 0             higher   d > 0
    flat    d <= tolerance (a loss: not worse than the reference by more than `tolerance` nats per character)

The verdict (paper_comparison), from the 95% interval of d:
    paired   (records given) the t-interval of the per-seed differences d_s = a_s - b_s over the seeds both sides
             share: arena seed s gives every training method the same batches, and an inference method changes
             the RoPE model of seed s, so the pairs share their data; the interval of d is then narrower than two
             separate intervals, and honest (it is Student's t on n numbers, n - 1 degrees of freedom).
    intervals (the table alone) the two cells' intervals: d's interval is taken as [low_a - high_b, high_a - low_b],
             so a side is called only when the two intervals do not overlap (for flat: when even the farthest
             ends of the two intervals stay within, or beyond, the tolerance); wider than the paired one.
    "agrees" when the whole interval lies on the paper's side (d < 0 for lower, d > 0 for higher, d < tolerance for
    flat), "disagrees" when it lies wholly on the other side, otherwise "not resolved" (with why: the interval
    straddles the line, or one seed gives no interval). A disagreement says our protocol gave the opposite
    result; `likely_cause` names the protocol difference most likely to explain it (model size, tokens, L,
    tokenizer, what the paper measured).

Each claim was checked against its primary source (the paper's abstract or the authors' own page or repository);
the sentences are ours. Claims we could not check are not here (the arena's CoPE, Leaky ReRoPE, Llama 3 scaling,
sinusoidal, learned, Shaw: no checked length claim).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..experiments.arena_methods import ARENA_METHODS
from ..experiments.config import ExperimentConfig
from ..printing import mean_ci
from .table import LEVEL, _cell, _columns

DIRECTIONS = ("lower", "higher", "flat")
#: the table's columns at the protocol's lengths (L, 2L, 4L, 8L): loss_1L ... loss_8L, exactly_L, probe gains
MEASURES = tuple(key for key, _, _ in _columns(sorted(ExperimentConfig().eval_multiples)))
LOSS_MEASURES = tuple(m for m in MEASURES if m.startswith("loss_") or m == "exactly_L")
#: how far a loss may rise and still count as "flat": 0.05 nats per character, about 3-4% of the arena's losses
#: after 1000 steps (our choice, stated; the papers say "comparable", "minimal degradation")
FLAT_TOLERANCE = 0.05
VERDICTS = ("agrees", "disagrees", "not resolved")


@dataclass(frozen=True)
class PaperClaim:
    """One paper's length claim as a direction on the arena's table. method, compared_with: names of
    ARENA_METHODS (compared_with None: an absolute claim, the method's `measure` against its own `reference`);
    measure, reference: table keys (MEASURES); direction: "lower" / "higher" / "flat"; tolerance: flat only
    (nats per character); claim: the paper's claim in one sentence; source: arXiv id (or the author's page) and
    where it says so; likely_cause: the protocol difference most likely to explain a disagreement."""
    method: str
    compared_with: str | None
    measure: str
    direction: str
    claim: str
    source: str
    likely_cause: str
    reference: str = "loss_1L"
    tolerance: float | None = None

    def __post_init__(self):
        for name in ("method", "compared_with"):
            value = getattr(self, name)
            if value is None and name == "compared_with":
                continue
            if value not in ARENA_METHODS:
                raise ValueError(f"{name} must name an arena method (experiments.arena_methods.ARENA_METHODS), "
                                 f"got {value!r}")
        if self.compared_with == self.method:
            raise ValueError(f"compared_with must be another method than {self.method!r} (or None)")
        for name in ("measure", "reference"):
            if getattr(self, name) not in MEASURES:
                raise ValueError(f"{name} must be one of the table's keys {list(MEASURES)}, "
                                 f"got {getattr(self, name)!r}")
        if self.compared_with is None and self.measure == self.reference:
            raise ValueError(f"an absolute claim compares measure with another column: measure and reference "
                             f"are both {self.measure!r}")
        if self.direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {list(DIRECTIONS)}, got {self.direction!r}")
        if self.direction == "flat":
            sides = [self.measure] + ([self.reference] if self.compared_with is None else [])
            if any(m not in LOSS_MEASURES for m in sides):
                raise ValueError(f"a flat claim compares losses (lower is better: {list(LOSS_MEASURES)}), "
                                 f"got measure {self.measure!r}, reference {self.reference!r}")
            if isinstance(self.tolerance, bool) or not isinstance(self.tolerance, (int, float)) or not (
                    math.isfinite(self.tolerance) and self.tolerance > 0):
                raise ValueError(f"tolerance must be a number > 0 (nats per character) for a flat claim, "
                                 f"got {self.tolerance!r}")
        elif self.tolerance is not None:
            raise ValueError(f"tolerance is for flat claims only; direction {self.direction!r} takes None, "
                             f"got {self.tolerance!r}")
        for name in ("claim", "source", "likely_cause"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name).strip():
                raise TypeError(f"{name} must be a non-empty str, got {getattr(self, name)!r}")

    @property
    def other(self) -> tuple:
        """(method, column) of the side the claim is measured against."""
        return (self.method, self.reference) if self.compared_with is None else (self.compared_with, self.measure)


_NO_FT = "here the RoPE model gets no fine-tuning at all"
CLAIMS: tuple = (
    # ------------------------------------------------------------------------------------------ encodings
    PaperClaim("alibi", None, "loss_2L", "flat", tolerance=FLAT_TOLERANCE,
               claim="A model trained at L with linear distance penalties reads windows of 2L without losing "
                     "quality: its perplexity there matches a sinusoidal model trained at 2L.",
               source="Press et al. 2022, arXiv 2108.12409, abstract (1.3B model, L = 1024 -> 2048)",
               likely_cause="the paper measures words (BPE tokens) with models up to 1.3B parameters; the arena's "
                            "characters carry less context per position, and a 2-layer model after 1000 steps "
                            "may gain little from distant characters either way"),
    PaperClaim("alibi", "sinusoidal", "loss_2L", "lower",
               claim="The position methods in use (sinusoidal among them) do not extrapolate efficiently, while "
                     "ALiBi does: past L, ALiBi should beat sinusoidal.",
               source="Press et al. 2022, arXiv 2108.12409, abstract",
               likely_cause="the paper's models are word-level and far larger; a 2-layer character model after "
                            "1000 steps may lean little on its absolute positions, so unseen positions cost it "
                            "less than they cost the paper's sinusoidal models"),
    PaperClaim("xpos", "rope", "loss_4L", "lower",
               claim="xPos (RoPE with a per-pair exponential decay) extrapolates past its training length where "
                     "RoPE does not.",
               source="Sun et al. 2022, arXiv 2212.10554, abstract and Table 1 (RoPE marked as not "
                      "extrapolating)",
               likely_cause="the paper's extrapolation also relies on blockwise causal attention at inference "
                            "(the arena uses full causal attention), and the arena keeps the paper's decay scale "
                            "B = 512, which spans 8 of the arena's training lengths (L = 64 characters): the "
                            "decay is gentle over every window measured"),
    PaperClaim("kerple", None, "loss_8L", "flat", tolerance=FLAT_TOLERANCE,
               claim="The logarithmic Kerple bias keeps the loss of a model trained at L nearly unchanged on much "
                     "longer inputs.",
               source="Chi et al. 2022, arXiv 2205.09921, abstract (log variant; trained at 512 on "
                      "OpenWebText2, GitHub, ArXiv)",
               likely_cause="the paper trains GPT-NeoX models at 512 BPE tokens for far more steps; the arena's "
                            "r1, r2 per head are learned in 1000 steps at L = 64 characters and may not have "
                            "settled into a strong enough decay"),
    PaperClaim("fire", "kerple", "loss_8L", "lower",
               claim="FIRE, which can express T5's buckets, ALiBi and Kerple, generalizes to longer contexts "
                     "better than those additive biases in zero-shot language modelling.",
               source="Li et al. 2023, arXiv 2310.04418, abstract",
               likely_cause="FIRE's MLP reads each distance divided, in log scale, by the query's position once "
                            "that passes a learned threshold, which TinyLM initialises to the training length L: "
                            "past L the same near distance reaches the MLP as a smaller number than any query in "
                            "training gave it (distance 1 at position 511 is half its value at position 63, at "
                            "the initial c = 0.1), so the local biases the model relies on shift; Kerple's bias "
                            "depends on the distance alone"),
    PaperClaim("t5", "rope", "loss_2L", "lower",
               claim="Rotary, ALiBi and absolute encodings are not well suited to length generalization, while "
                     "T5's relative bias is the best of the explicit encodings compared.",
               source="Kazemnejad et al. 2023, arXiv 2305.19466, abstract (rotary, ALiBi, absolute) and "
                      "Section 4 (T5's bias the best explicit one)",
               likely_cause="the paper measures exact-match accuracy on synthetic reasoning and math tasks with "
                            "a small decoder trained from scratch, not language-model loss on text"),
    PaperClaim("nope", "rope", "loss_2L", "lower",
               claim="A decoder-only Transformer without any position encoding generalizes to longer inputs "
                     "better than the explicit encodings, rotary included.",
               source="Kazemnejad et al. 2023, arXiv 2305.19466, abstract",
               likely_cause="the paper measures accuracy on synthetic reasoning tasks, not language-model loss; "
                            "on text, NoPE's attention spreads over the longer window (Wang et al. 2024, arXiv "
                            "2404.12224, find NoPE's length generalization limited in language modelling)"),
    PaperClaim("fox", "rope", "loss_8L", "lower",
               claim="Adding a forget gate to softmax attention (no position encoding) beats the RoPE "
                     "Transformer at length extrapolation.",
               source="Lin et al. 2025, arXiv 2503.02130, abstract",
               likely_cause="the paper trains much larger models on much longer sequences; the arena's 1000 "
                            "steps at L = 64 characters may leave the learned forget gates close to their start"),
    PaperClaim("path", "rope", "loss_1L", "lower",
               claim="Data-dependent Householder position encoding gives a lower language-modelling loss than "
                     "RoPE (a claim at the training length).",
               source="Yang et al. 2025, arXiv 2505.16381, abstract ('moderate-scale real-world language "
                      "modeling')",
               likely_cause="the paper's 'moderate-scale' language models are far larger and train far longer "
                            "than the arena's (about 0.1M parameters, 1000 steps); the extra data-dependent "
                            "parameters may not pay for themselves that early"),
    # -------------------------------------------------------------------------- configurations and recipes
    PaperClaim("partial_rope_1_8", "rope", "loss_1L", "flat", tolerance=FLAT_TOLERANCE,
               claim="Rotating only about 10% of each head's dimensions converges to a final loss comparable to "
                     "full RoPE (a claim at the training length).",
               source="Khan et al. 2026, arXiv 2603.11611, abstract",
               likely_cause="the arena's 1/8 arm rotates only 2 pairs of a 32-dim head (frequencies 1 and "
                            "0.01 rad per position); the paper's models have larger heads, so more rotated pairs "
                            "at the same fraction, and train far longer"),
    PaperClaim("rope_nope_hybrid", "rope", "loss_8L", "lower",
               claim="Interleaving NoPE layers with RoPE layers beats a RoPE-only Transformer on long contexts.",
               source="Yang et al. 2025, arXiv 2501.18795, abstract (RNoPE-SWA)",
               likely_cause="the paper's hybrid also restricts its RoPE layers to a sliding window and trains "
                            "with long-context data, measured on retrieval benchmarks (NIAH, RULER); the arena's "
                            "hybrid is 1 NoPE and 1 full-attention RoPE block, scored on loss"),
    PaperClaim("randomized_positions", "rope", "loss_8L", "lower",
               claim="Training on sorted random positions drawn from a range longer than any test input lets "
                     "Transformers generalize to unseen lengths (+12.0% test accuracy on average).",
               source="Ruoss et al. 2023, arXiv 2305.16843, abstract (6000 models, 15 algorithmic tasks)",
               likely_cause="the paper measures accuracy on algorithmic tasks (the answer depends on the whole "
                            "input); language-model loss on text depends mostly on nearby characters, which "
                            "random gaps during training make harder to read"),
    PaperClaim("pose", "rope", "loss_8L", "lower",
               claim="Training in a fixed window with skipped position chunks extends the usable context to the "
                     "target length at little cost in quality.",
               source="Zhu et al. 2023, arXiv 2309.10400, abstract",
               likely_cause="PoSE fine-tunes a pretrained LLaMA (with PI or YaRN interpolation) to 16k-128k; the "
                            "arena trains from scratch with plain RoPE and skipped positions"),
    # ------------------------------------------------------------------------------ inference-time methods
    PaperClaim("rerope", None, "loss_8L", "lower",
               claim="Capping RoPE's relative positions at a window w, without fine-tuning, gives a loss that "
                     "goes down as the context grows past the training length.",
               source="Su 2023, github.com/bojone/rerope README (llama2-13b: loss 1.50 at 4k, 1.43 at 8k, "
                      "1.40 at 16k); kexue.fm/archives/9708",
               likely_cause="a 13B model trained on 4k tokens uses far context much more than a 2-layer model "
                            "trained on 64 characters: with little to gain from far context, the capped "
                            "positions can only cost"),
    PaperClaim("rerope", "rope", "loss_8L", "lower",
               claim="Without fine-tuning, ReRoPE keeps the loss at twice the training length near its "
                     "training-length value where plain RoPE's loss explodes.",
               source="Su 2023, github.com/bojone/rerope README (RoPE-8k loss 8.86 vs ReRoPE-8k 1.43)",
               likely_cause="the README's model is llama2-13b at 4k tokens with w = 1024 (no fine-tuning there "
                            "either); the arena's window w = L/2 is our choice"),
    PaperClaim("self_extend", "rope", "loss_8L", "lower",
               claim="Grouping far positions (floor division) and keeping near ones exact extends a RoPE "
                     "model's context window without any fine-tuning.",
               source="Jin et al. 2024, arXiv 2401.01325, abstract",
               likely_cause="the paper's group size and neighbour window are tuned per model (Llama-2 and others "
                            "at 4k); the arena's are set by a rule (w = L/2, the smallest group that fits)"),
    PaperClaim("log_n", "rope", "loss_2L", "lower",
               claim="Scaling attention logits by log_L(n) keeps attention entropy steady as the input grows and "
                     "improves length extrapolation.",
               source="Su 2021, kexue.fm/archives/8823 (masked-LM experiments)",
               likely_cause="the post's evidence is masked language models that used the scale when trained; "
                            "the arena adds it at inference to a causal model trained without it"),
    PaperClaim("scaling_linear", "rope", "loss_8L", "lower",
               claim="Position Interpolation (positions divided by the extension factor) extends a RoPE model's "
                     "window where extrapolation fails, with minimal fine-tuning (within 1000 steps).",
               source="Chen et al. 2023, arXiv 2306.15595, abstract",
               likely_cause=f"the paper fine-tunes after interpolating (up to 1000 steps); {_NO_FT}, and "
                            f"squeezing 8L into L blurs the near positions the model relies on"),
    PaperClaim("scaling_ntk", "rope", "loss_8L", "lower",
               claim="Raising RoPE's base (NTK-aware scaling) extends LLaMA's context to 8k+ without any "
                     "fine-tuning and with minimal perplexity loss.",
               source="bloc97 2023, reddit r/LocalLLaMA 14lz7j5 (the post that introduced it)",
               likely_cause="the post's model is LLaMA 7B (2k tokens, head dim 128: many slow pairs to stretch); "
                            "the arena's head has 16 pairs, so the base change moves the fast pairs too"),
    PaperClaim("scaling_dynamic", "rope", "loss_8L", "lower",
               claim="Choosing the NTK scaling from the current length (dynamic NTK) improves long-context "
                     "LLaMA with zero fine-tuning and avoids the static scalings' blow-up.",
               source="emozilla 2023, reddit r/LocalLLaMA 14mrgpr (the post that introduced it)",
               likely_cause="the post's model is LLaMA 7B at 2k tokens; the arena's small head has few slow "
                            "pairs for the rescaled base to act on"),
    PaperClaim("scaling_yarn", "rope", "loss_8L", "lower",
               claim="YaRN (per-frequency interpolation and an attention temperature) extends RoPE models' "
                     "windows with 10x fewer tokens and 2.5x fewer steps than earlier methods.",
               source="Peng et al. 2023, arXiv 2309.00071, abstract",
               likely_cause=f"the paper's static YaRN results are after a short fine-tuning; {_NO_FT}"),
)


# --------------------------------------------------------------------------------------------- verdicts
def _check_table(table) -> dict:
    if not isinstance(table, dict):
        raise TypeError(f"table must be arena_table's dict, got {type(table).__name__}")
    missing = [k for k in ("rows", "keys", "multiples") if k not in table]
    if missing:
        raise ValueError(f"table must be posenc_lib.arena.table.arena_table's dict: it has no {missing}")
    rows = {}
    for row in table["rows"]:
        if not isinstance(row, dict) or "method" not in row or "cells" not in row:
            raise ValueError(f"table['rows'] must hold dicts with 'method' and 'cells', got {row!r}")
        rows[row["method"]] = row
    return rows


def _side(threshold: float, direction: str, low: float, high: float) -> str:
    """The verdict of an interval [low, high] of d against the paper's line (0, or the tolerance for flat)."""
    if direction == "higher":
        return "agrees" if low > threshold else "disagrees" if high < threshold else "not resolved"
    return "agrees" if high < threshold else "disagrees" if low > threshold else "not resolved"


def _paired(claim: PaperClaim, records: dict, seeds: list, multiples) -> dict | None:
    """The t-interval of the per-seed differences a_s - b_s over `seeds` (both sides recorded), or None."""
    read = {key: fn for key, _, fn in _columns(multiples)}
    other_method, other_key = claim.other
    diffs = []
    for s in seeds:
        a, b = records.get((claim.method, s)), records.get((other_method, s))
        if a is None or b is None:
            continue
        x, y = read[claim.measure](a), read[other_key](b)
        if x is None or y is None:
            return None
        diffs.append(x - y)
    return mean_ci(diffs, LEVEL) if diffs else None


def paper_comparison(table: dict, records: dict | None = None, claims=CLAIMS) -> list:
    """For each claim whose methods and columns are in `table` (arena_table's dict): the measured numbers and the
    verdict. With `records` ({(method, seed): record}, cache.cached_records), the test is the paired per-seed
    difference; without, the two cells' intervals (see the module docstring). Returns a list of dicts:
    {"method", "compared_with", "measure", "reference", "direction", "tolerance", "claim", "source",
    "method_value", "other_value" (mean_ci dicts of the table's cells), "difference" (mean, low, high, n),
    "test" ("paired" or "intervals"), "verdict" (one of VERDICTS), "why" (when not resolved),
    "likely_cause" (when the verdict is not "agrees", else "")}."""
    rows = _check_table(table)
    if records is not None and not isinstance(records, dict):
        raise TypeError(f"records must be a dict {{(method, seed): record}} (cache.cached_records) or None, "
                        f"got {type(records).__name__}")
    if not all(isinstance(c, PaperClaim) for c in claims):
        raise TypeError("claims must be PaperClaim records")
    out = []
    for claim in claims:
        other_method, other_key = claim.other
        if claim.method not in rows or other_method not in rows or not {claim.measure, other_key} <= set(
                table["keys"]):
            continue
        mine, theirs = rows[claim.method]["cells"][claim.measure], rows[other_method]["cells"][other_key]
        threshold = claim.tolerance if claim.direction == "flat" else 0.0
        row = {"method": claim.method, "compared_with": claim.compared_with, "measure": claim.measure,
               "reference": other_key, "direction": claim.direction, "tolerance": claim.tolerance,
               "claim": claim.claim, "source": claim.source, "method_value": mine, "other_value": theirs}
        shared = [s for s in rows[claim.method]["seeds"] if s in rows[other_method]["seeds"]]
        diff = _paired(claim, records, shared, table["multiples"]) if records is not None else None
        if diff is not None:
            row["test"] = "paired"
            diff = {"mean": diff["mean"], "low": diff["low"], "high": diff["high"], "n": diff["n"]}
        elif mine is None or theirs is None:
            row.update(test="intervals", difference=None, verdict="not resolved",
                       why="no value on one side (n/a in the table)")
        else:
            row["test"] = "intervals"
            both = mine["half_width"] is not None and theirs["half_width"] is not None
            diff = {"mean": mine["mean"] - theirs["mean"], "low": mine["low"] - theirs["high"] if both else None,
                    "high": mine["high"] - theirs["low"] if both else None, "n": min(mine["n"], theirs["n"])}
        if diff is not None:
            row["difference"] = diff
            if diff["low"] is None:
                row.update(verdict="not resolved", why="one seed: no interval")
            else:
                row["verdict"] = _side(threshold, claim.direction, diff["low"], diff["high"])
                if row["verdict"] == "not resolved":
                    row["why"] = ("intervals overlap" if row["test"] == "intervals" and claim.direction != "flat"
                                  else "the interval of the difference contains the paper's line")
        row["likely_cause"] = "" if row["verdict"] == "agrees" else claim.likely_cause
        out.append(row)
    return out


# ---------------------------------------------------------------------------------------------- Markdown
def _num(x) -> str:
    return "n/a" if x is None else f"{x:+.3f}"


def _line(row: dict) -> str:
    """'d < 0', 'd > 0' or 'd < +0.050': the side the paper claims."""
    return f"d < {row['tolerance']:+.3f}" if row["direction"] == "flat" else {"lower": "d < 0", "higher": "d > 0"}[
        row["direction"]]


def format_comparison(rows: list) -> str:
    """paper_comparison's rows as Markdown: one line per claim (the numbers, the verdict), then the likely causes
    of the claims the table does not confirm, then how to read it."""
    if not isinstance(rows, list):
        raise TypeError(f"rows must be paper_comparison's list, got {type(rows).__name__}")
    if not rows:
        return "No claim of the papers concerns the methods of this table.\n"
    head = ["method", "against", "column", "paper says", "ours: method", "ours: against", "d (95% CI)", "test",
            "verdict"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        against = r["compared_with"] or f"itself at {r['reference']}"
        d = r.get("difference")
        ci = "n/a" if d is None else _num(d["mean"]) + ("" if d["low"] is None else
                                                         f" [{_num(d['low'])}, {_num(d['high'])}]")
        verdict = r["verdict"] + (f" ({r['why']})" if r.get("why") else "")
        lines.append("| " + " | ".join([r["method"], against, r["measure"], _line(r), _cell(r["method_value"]),
                                        _cell(r["other_value"]), ci, r["test"], verdict]) + " |")
    notes = [f"- **{r['method']}** vs {r['compared_with'] or 'itself'} ({r['measure']}): {r['claim']} "
             f"[{r['source']}] Likely cause: {r['likely_cause']}." for r in rows if r["verdict"] != "agrees"]
    agreed = [f"- **{r['method']}** vs {r['compared_with'] or 'itself'} ({r['measure']}): {r['claim']} "
              f"[{r['source']}]" for r in rows if r["verdict"] == "agrees"]
    counts = ", ".join(f"{sum(r['verdict'] == v for r in rows)} {v}" for v in VERDICTS)
    text = "\n".join(lines) + f"\n\n{counts}.\n"
    if notes:
        text += "\nWhere the table does not confirm the paper, and the likely cause:\n\n" + "\n".join(notes) + "\n"
    if agreed:
        text += "\nConfirmed here:\n\n" + "\n".join(agreed) + "\n"
    return text + (
        "\nd = the method's column minus the other side's (lower is better for a loss, higher for a probe gain); "
        "the paper's side is `paper says` (flat: the loss rises by less than the tolerance, nats per character). "
        "paired: the 95% t-interval of the per-seed differences (the same seeds, batches and, for inference "
        "methods, the same trained RoPE model on both sides); intervals: from the two cells' 95% intervals. "
        "agrees / disagrees: the whole interval on the paper's / the other side; otherwise not resolved.\n")
