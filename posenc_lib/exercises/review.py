"""The quiz of notebook 09: QUIZ (question id -> question, options, and either a fixed answer with the
reason each wrong option is wrong, or a `solve` that COMPUTES the answer), `show_quiz()` prints it,
`check_quiz({qid: letter})` checks and explains every wrong answer.

The computed questions read the library (RoPE frequencies, T5 buckets, the scalings), PyTorch itself
(what nn.Embedding does past its last row) or notebook 07's cached results in data/, so their answers
follow the code and the data, not a stored letter. SOLUTIONS["quiz"] (= quiz_answers) gives the right
letters. The right letters are spread over a-d with no run of three (tests/test_exercises_review.py).
"""
from __future__ import annotations

import math

import torch

from ..experiments import EXTRAPOLATION_FILE, load_results
from ..relative import t5_relative_bucket
from ..scaling import extension_scaling, rope_inv_freq
from ._common import ExerciseError, ok

__all__ = ["QUIZ", "quiz_answers", "show_quiz", "check_quiz"]

# The setting of notebooks 07-08's RoPE model: head dim 16, base 10000, trained at L0 = 64.
_DIM, _L0 = 16, 64


# ------------------------------------------------------------------ what the computed questions compute
def _turns_in_l0(dim: int = _DIM, l0: int = _L0) -> torch.Tensor:
    """Turns each RoPE pair makes over the trained length: L0 * theta_i / 2 pi (float64)."""
    return l0 * rope_inv_freq(dim)[0] / (2 * math.pi)


def _pairs_under_one_turn(_results) -> int:
    return int((_turns_in_l0() < 1).sum())


def _yarn_kept_pairs(_results) -> tuple:
    scaling = extension_scaling("yarn", 4.0, original_max_position_embeddings=_L0)
    ratio = rope_inv_freq(_DIM, scaling=scaling)[0] / rope_inv_freq(_DIM)[0]
    return tuple(int(i) for i in torch.nonzero((ratio - 1).abs() < 1e-12).flatten())


def _ntk_overshoot(_results, factor: float = 4.0) -> float:
    """How far the slow pairs (< 1 turn in L0) turn over factor * L0 under NTK-aware scaling, in units
    of their turns over L0 in training: factor * theta'_i / theta_i, largest at the first slow pair."""
    scaling = extension_scaling("ntk", factor, original_max_position_embeddings=_L0)
    reach = factor * rope_inv_freq(_DIM, scaling=scaling)[0] / rope_inv_freq(_DIM)[0]
    return float(reach[_turns_in_l0() < 1].max())


def _dynamic_as_ntk(_results, window: int = 4 * _L0, candidates=(2, 4, 7, 8)) -> float:
    """The static NTK factor whose frequencies equal dynamic NTK's (fixed factor 2) on a window read in one pass."""
    dynamic = extension_scaling("dynamic", 4.0, original_max_position_embeddings=_L0)  # its own factor: 2
    theta = rope_inv_freq(_DIM, scaling=dynamic, seq_len=window)[0]
    for f in candidates:
        if torch.allclose(theta, rope_inv_freq(_DIM, scaling={"rope_type": "ntk", "factor": float(f)})[0],
                          rtol=1e-12, atol=0):
            return float(f)
    return float("nan")


def _t5_last_bucket_starts(_results, far: int = 400) -> int:
    """The smallest distance whose causal T5 bucket (32 buckets, max_distance 64, as in notebook 07) is
    the bucket of a key `far` characters back (relative position key - query = -distance)."""
    distance = torch.arange(1, far + 1)
    bucket = t5_relative_bucket(-distance, bidirectional=False, num_buckets=32, max_distance=64)
    return int(distance[bucket == bucket[-1]].min())


def _embedding_past_its_rows(_results) -> str:
    """What plain PyTorch does when a 64-row nn.Embedding is asked for row 100 (on the CPU): the name of
    the exception it raises, or which row it returns."""
    table = torch.nn.Embedding(64, 4)
    try:
        out = table(torch.tensor([100]))[0]
    except Exception as error:  # noqa: BLE001 -- the behaviour is named by the exception's type
        return type(error).__name__
    rows = {"row 63": table.weight[63], "row 36": table.weight[36], "zeros": torch.zeros_like(out)}
    return next((name for name, row in rows.items() if torch.equal(out, row)), "another row")


def _rises(results, multiple: str = "8") -> dict:
    return {enc: row[multiple]["mean"] - row["1"]["mean"] for enc, row in results["summary"].items()
            if row.get(multiple) is not None}


def _measured_flattest(results, multiple: str = "8") -> tuple:
    """(encoding with the smallest mean rise from L to multiple*L, {encoding: rise}) from the results."""
    rises = _rises(results, multiple)
    return min(rises, key=rises.get), rises


def _worst_with_position_at_l(results) -> str:
    at_l = {enc: row["1"]["mean"] for enc, row in results["summary"].items() if enc != "nope"}
    return max(at_l, key=at_l.get)


# ---------------------------------------------------------------------------------------------- the quiz
# Fixed questions: "answer" and "why" (one reason per wrong option). Computed questions: "values"
# (letter -> the value that option stands for), "solve" (results -> the right value) and "explain"
# (results -> a sentence with the computed numbers, shown for a wrong answer).
QUIZ: dict = {
    "equivariance": {
        "question": "Self-attention with no positional encoding and no mask; you permute the input tokens. "
                    "The outputs ...",
        "options": {"a": "are unchanged", "b": "change in a way that depends on the permutation",
                    "c": "are permuted the same way", "d": "are all equal"},
        "answer": "c",
        "why": {"a": "that is invariance, which needs a pooled readout (a sum or mean over tokens) on top "
                     "(notebook 01)",
                "b": "each output depends on its own token and on the SET of the others, so it simply moves with "
                     "its token (notebook 01)",
                "d": "outputs differ whenever the tokens differ; attention only mixes them with order-blind weights"},
    },
    "rope_relative": {
        "question": "With RoPE, the score of a query at position m and a key at position n depends on the positions "
                    "through ...",
        "options": {"a": "m - n, with its sign", "b": "|m - n| only", "c": "m and n separately", "d": "m + n"},
        "answer": "a",
        "why": {"b": "RoPE keeps the sign: +k and -k give different scores (unlike PE.PE of notebook 03; 09 sec. 2)",
                "c": "R_m^T R_n = R_{n-m}: only the difference survives the dot product (notebook 06)",
                "d": "the rotations compose to a turn by the DIFFERENCE of the angles (notebook 06)"},
    },
    "alibi_sign": {
        "question": "ALiBi adds to the score of query i and key j (slope m_h > 0 for head h) ...",
        "options": {"a": "+m_h |i - j|", "b": "-m_h (i - j)^2", "c": "+m_h (i - j)", "d": "-m_h |i - j|"},
        "answer": "d",
        "why": {"a": "a positive bias would favour FAR keys; ALiBi penalises distance",
                "b": "the penalty is linear in the distance (hence 'linear biases')",
                "c": "under a causal mask i - j >= 0, so this too would favour far keys"},
    },
    "learned_past_max_len": {
        "question": "Plain PyTorch: a position table `torch.nn.Embedding(64, d)` (rows 0..63) is indexed with "
                    "position 100 on the CPU. What happens?",
        "options": {"a": "it returns row 63 (the index is clamped)", "b": "IndexError: index out of range in self",
                    "c": "it returns a row of zeros", "d": "it returns row 100 - 64 = 36 (the index wraps around)"},
        "values": {"a": "row 63", "b": "IndexError", "c": "zeros", "d": "row 36"},
        "solve": _embedding_past_its_rows,
        "explain": lambda r: (f"torch.nn.Embedding(64, 4)(torch.tensor([100])) gives: {_embedding_past_its_rows(r)}; "
                              "nothing clamps or wraps the index (notebook 04; posenc_lib's LearnedEncoding "
                              "raises a ValueError naming max_len first)"),
    },
    "sinusoidal_at_once": {
        "question": "In notebook 07 the sinusoidal model is worse than a unigram guess already at 2L. Why at once?",
        "options": {"a": "past L its slow dimensions take values never seen in training, and they are added to "
                         "every token's input, so every layer is off-distribution at every new position",
                    "b": "its table has no rows past L",
                    "c": "sin and cos repeat, so positions past L collide with trained ones",
                    "d": "a longer window has more keys, so the softmax gets flatter"},
        "answer": "a",
        "why": {"b": "that is the learned table; the sinusoidal formula gives a vector for any position (notebook 02)",
                "c": "the slow dimensions' wavelengths reach 2 pi * 10000 positions: within 8L nothing repeats; the "
                     "values are new, not collisions (notebook 02)",
                "d": "every encoding gets more keys, yet ALiBi and T5 hold at 2L (notebook 07)"},
    },
    "t5_last_bucket": {
        "question": "Notebook 07's T5 bias (causal, 32 buckets, max_distance 64). A key 400 characters back gets "
                    "the bias of one bucket. From which distance on do keys share that bucket?",
        "options": {"a": "from 400 on (each far distance has its own bucket)", "b": "from 128 on",
                    "c": "from 59 on: every key further back, trained only on distances 59-63",
                    "d": "from 16 on (all distances past the exact buckets)"},
        "values": {"a": 400, "b": 128, "c": 59, "d": 16},
        "solve": _t5_last_bucket_starts,
        "explain": lambda r: (f"t5_relative_bucket(-n, bidirectional=False, num_buckets=32, max_distance=64) gives "
                              f"the last bucket to every n >= {_t5_last_bucket_starts(r)}: at 8L hundreds of keys "
                              "share one bias learned from a handful of distances (notebooks 05, 07)"),
    },
    "pairs_under_one_turn": {
        "question": "RoPE with head dim 16, base 10000, trained at L0 = 64 (notebooks 07-08): how many of its 8 "
                    "pairs make less than one full turn over L0?",
        "options": {"a": "2", "b": "5", "c": "8", "d": "3"},
        "values": {"a": 2, "b": 5, "c": 8, "d": 3},
        "solve": _pairs_under_one_turn,
        "explain": lambda r: ("turns L0 * theta_i / 2 pi = "
                              + ", ".join(f"{t:.3g}" for t in _turns_in_l0().tolist())
                              + f": {_pairs_under_one_turn(r)} are below 1 (notebook 08, sec. 1)"),
    },
    "yarn_kept_pairs": {
        "question": "YaRN at factor 4 on that model (L0 = 64, d = 16, beta_fast 32, beta_slow 1): which pairs "
                    "keep their frequency untouched?",
        "options": {"a": "none", "b": "pairs 0-2 (those with more than one turn in L0)", "c": "every pair",
                    "d": "pair 0 only"},
        "values": {"a": (), "b": (0, 1, 2), "c": tuple(range(_DIM // 2)), "d": (0,)},
        "solve": _yarn_kept_pairs,
        "explain": lambda r: (f"rope_inv_freq with YaRN's scaling leaves only pairs {list(_yarn_kept_pairs(r))} "
                              f"untouched: no pair makes beta_fast = 32 turns in {_L0} tokens (pair 0 makes "
                              f"{float(_turns_in_l0()[0]):.1f}), so the ramp starts at pair 0 (notebook 08, sec. 2)"),
    },
    "ntk_overshoot": {
        "question": "NTK-aware at factor 4 on that model, on a window of 4 * L0: the slow pairs turn past the "
                    "angles they saw in training. By how much at most (turns over 4 L0 / turns over L0)?",
        "options": {"a": "1.00 (they stay within their trained angles)", "b": "4.00", "c": "2.21", "d": "1.45"},
        "values": {"a": 1.0, "b": 4.0, "c": 2.21, "d": 1.45},
        "solve": _ntk_overshoot,
        "explain": lambda r: (f"factor * theta'_i / theta_i = 4 ** (1 - 2 i / (d - 2)), largest at the first slow "
                              f"pair: {_ntk_overshoot(r):.2f} (notebook 08, sec. 4)"),
    },
    "ntk_overshoot_cause": {
        "question": "At a fixed factor, what sets how far NTK-aware's slow pairs overshoot their trained angles?",
        "options": {"a": "where the slow pairs start in the head, i.e. L0 against the base",
                    "b": "the number of pairs: more pairs make the geometric steps finer",
                    "c": "the attention factor", "d": "nothing: NTK-aware keeps every pair within its trained angles"},
        "answer": "a",
        "why": {"b": "the overshoot is factor ** (1 - 2 i0 / (d - 2)) at the first slow pair i0; 2 i0 / (d - 2) tends "
                     "to ln(L0 / 2 pi) / ln(base) as d grows. At L0 = 64 it is 2.21 at d = 16 and 2.75 at d = 128: "
                     "more pairs, MORE overshoot (notebook 08, sec. 4)",
                "c": "NTK-aware has none (attention factor 1); only YaRN rescales the scores",
                "d": "only its slowest pair is slowed by the full factor; the others overshoot. YaRN's authors make "
                     "this point about NTK-aware themselves (notebook 08)"},
    },
    "dynamic_ntk_factor": {
        "question": "Dynamic NTK configured with factor 2 on that model reads a window of 4 * L0 = 256 tokens in "
                    "one pass. Its frequencies are those of static NTK-aware with factor ...",
        "options": {"a": "2", "b": "4", "c": "8", "d": "7"},
        "values": {"a": 2.0, "b": 4.0, "c": 8.0, "d": 7.0},
        "solve": _dynamic_as_ntk,
        "explain": lambda r: ("factor' = factor * length / L0 - (factor - 1) with factor 2, length 256, L0 64: "
                              f"{_dynamic_as_ntk(r):g}; rope_inv_freq gives the same frequencies "
                              "(notebook 08, sec. 2)"),
    },
    "length_dependent": {
        "question": "Of dynamic NTK, YaRN and Llama 3.1, which gives the same position a different rotation "
                    "depending on how long the whole sequence is?",
        "options": {"a": "YaRN", "b": "dynamic NTK", "c": "Llama 3.1", "d": "all three"},
        "answer": "b",
        "why": {"a": "YaRN's frequencies are fixed by its factor and L0; the sequence length does not enter",
                "c": "Llama 3.1's frequencies are fixed by its factor, L0 and the two wavelength thresholds",
                "d": "only dynamic NTK recomputes its base from the current length (so cached keys rotated "
                     "under an earlier length no longer match: YaRN's authors cache keys before RoPE for it)"},
    },
    "yarn_temperature": {
        "question": "YaRN and Llama 3.1 both keep the fast pairs and fully interpolate the slow ones. What does "
                    "YaRN do that Llama 3.1 does not?",
        "options": {"a": "it divides every frequency by the factor", "b": "it raises the base",
                    "c": "it scales the attention logits, by (0.1 ln s + 1)^2",
                    "d": "it recomputes its factor from the sequence length"},
        "answer": "c",
        "why": {"a": "that is PI; both keep the fast pairs",
                "b": "that is NTK-aware (and ABF, raising the base before training)",
                "d": "that is dynamic scaling (dynamic NTK, or YaRN's optional dynamic variant), not YaRN as used "
                     "here"},
    },
    "pi_justification": {
        "question": "How do Chen et al. (2023) justify position interpolation?",
        "options": {"a": "interpolation keeps the fast pairs' speed",
                    "b": "it needs no fine-tuning",
                    "c": "NTK theory: networks need high frequencies",
                    "d": "a bound: attention scores at interpolated positions are bounded far more tightly "
                         "(~600x) than at extrapolated ones"},
        "answer": "d",
        "why": {"a": "PI slows EVERY pair, the fast ones included; that it loses fast-pair resolution is bloc97's and "
                     "YaRN's critique of PI, which led to NTK-aware and YaRN",
                "b": "the paper fine-tunes (about 1,000 steps); notebook 08 shows PI without it is poor",
                "c": "that is the argument behind NTK-aware scaling (bloc97), against PI"},
    },
    "uniform": {
        "question": "Which method slows every RoPE pair by the same factor?",
        "options": {"a": "NTK-aware", "b": "position interpolation (PI)", "c": "YaRN", "d": "Llama 3.1"},
        "answer": "b",
        "why": {"a": "NTK-aware is non-uniform too: base * s^(d/(d-2)) keeps the fastest pair and slows the slowest by "
                     "s, geometrically in between",
                "c": "YaRN ramps from untouched (fast pairs) to theta / s (slow pairs)",
                "d": "Llama 3.1 keeps short wavelengths, divides long ones by s, and blends in between"},
    },
    "angles_dtype": {
        "question": "Why are RoPE angles m * theta computed in float32 or better, even for a bf16 model?",
        "options": {"a": "bf16 cannot tell positions like 256 and 257 apart", "b": "sin and cos do not exist in bf16",
                    "c": "it is faster", "d": "bf16 cannot hold numbers above 65504"},
        "answer": "a",
        "why": {"b": "they exist; the problem is the INPUT m: bf16 has 8 significant bits (notebook 06)",
                "c": "it is slower, if anything; it is about precision (notebook 06)",
                "d": "bf16 has float32's exponent range (fp16 is the one that stops at 65504); its problem is "
                     "precision, not range"},
    },
    "glossary_length_extrapolation": {
        "question": "长度外推 (chángdù wàituī) is ...",
        "options": {"a": "position interpolation (PI)", "b": "context extension by fine-tuning",
                    "c": "length extrapolation: using a model on inputs longer than it was trained on",
                    "d": "the rotary base"},
        "answer": "c",
        "why": {"a": "position interpolation is 位置插值 (also 位置内插)",
                "b": "that is 上下文扩展 with 微调 (fine-tuning); 外推 means going beyond the trained range",
                "d": "the rotary base is 旋转底数"},
    },
    "measured_flattest": {
        "question": "In notebook 07's cached run, whose mean loss rose LEAST from L to 8L?",
        "options": {"a": "t5", "b": "alibi", "c": "nope", "d": "rope", "e": "sinusoidal"},
        "values": {"a": "t5", "b": "alibi", "c": "nope", "d": "rope", "e": "sinusoidal"},
        "solve": lambda r: _measured_flattest(r)[0],
        "explain": lambda r: ("rise from L to 8L: " + ", ".join(f"{e} {v:+.3f}" for e, v in _rises(r).items())
                              + f" nats/char (read data/{EXTRAPOLATION_FILE}, summary)"),
    },
    "worst_at_l": {
        "question": "In notebook 07's cached run, which encoding WITH position information had the highest loss at "
                    "the training length L itself?",
        "options": {"a": "t5", "b": "sinusoidal", "c": "learned", "d": "alibi", "e": "rope"},
        "values": {"a": "t5", "b": "sinusoidal", "c": "learned", "d": "alibi", "e": "rope"},
        "solve": _worst_with_position_at_l,
        "explain": lambda r: ("loss at L: " + ", ".join(f"{e} {row['1']['mean']:.3f}" for e, row in
                                                        r["summary"].items() if e != "nope")
                              + f" nats/char (data/{EXTRAPOLATION_FILE}); notebook 07 sec. 7 compares this with "
                                "the ALiBi paper"),
    },
}


def _letter(qid: str, item: dict, results) -> str:
    """The right letter of a computed question: the option whose value equals (numbers: within 0.005) the
    computed one. A computed value that no option holds is a bug in the quiz, not a wrong answer."""
    value = item["solve"](results)
    for letter, option in item["values"].items():
        if isinstance(value, float) and isinstance(option, (int, float)):
            if math.isclose(value, option, abs_tol=5e-3):
                return letter
        elif value == option:
            return letter
    raise RuntimeError(f"quiz question {qid!r}: the computed answer {value!r} is none of the options "
                       f"{item['values']}")


def quiz_answers(results: dict | None = None) -> dict:
    """The right letter for every QUIZ question; computed ones from the library, PyTorch and the results
    (default: notebook 07's cached run in data/, read only when a question needs it)."""
    if results is None and any("solve" in item for item in QUIZ.values()):
        results = load_results("extrapolation")
    return {qid: item["answer"] if "solve" not in item else _letter(qid, item, results) for qid, item in QUIZ.items()}


def show_quiz() -> None:
    """Print every question with its options."""
    for i, (qid, item) in enumerate(QUIZ.items(), 1):
        print(f"{i}. [{qid}] {item['question']}")
        for letter, text in item["options"].items():
            print(f"     {letter}) {text}")


def check_quiz(answers: dict, results: dict | None = None) -> None:
    """answers: {question id: letter}. Raises ExerciseError explaining every wrong or missing answer."""
    if not isinstance(answers, dict):
        raise ExerciseError(f"answers should be a dict like {{'equivariance': 'c', ...}}, got {type(answers).__name__}")
    unknown = sorted(set(answers) - set(QUIZ))
    if unknown:
        raise ExerciseError(f"unknown question ids {unknown}; the ids are {list(QUIZ)}")
    results = load_results("extrapolation") if results is None else results
    right = quiz_answers(results)
    problems = []
    for qid, item in QUIZ.items():
        given = answers.get(qid)
        if given is None:
            problems.append(f"[{qid}] not answered yet")
            continue
        given = str(given).strip().lower()
        if given not in item["options"]:
            problems.append(f"[{qid}] {given!r} is not one of the options {list(item['options'])}")
        elif given != right[qid]:
            why = item["explain"](results) if "solve" in item else item["why"][given]
            problems.append(f"[{qid}] not {given}: {why}")
    if problems:
        raise ExerciseError(f"{len(QUIZ) - len(problems)}/{len(QUIZ)} right.\n  " + "\n  ".join(problems))
    ok(f"all {len(QUIZ)} answers right")


# ------------------------------------------------------------------------------------ reference solutions

SOLUTIONS: dict = {  # exercise name -> a reference solution (kept out of the notebooks' visible cells)
    "quiz": quiz_answers,
}

CHECKS: dict = {name: globals()[f"check_{name}"] for name in SOLUTIONS}  # exercise name -> its checker
