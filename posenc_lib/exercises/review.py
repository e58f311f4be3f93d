"""The quiz of notebook 09: QUIZ (question id -> question, options, answer, why each wrong option is
wrong), `show_quiz()` prints it, `check_quiz({qid: letter})` checks and explains every wrong answer.
Questions about notebook 07's measurements compute their answer from the cached results in data/,
not from a stored letter. SOLUTIONS["quiz"] (= quiz_answers) gives the right letters.
"""
from __future__ import annotations

from ..experiments import EXTRAPOLATION_FILE, load_results
from ._common import ExerciseError, ok

__all__ = ["QUIZ", "quiz_answers", "show_quiz", "check_quiz"]


def _measured_flattest(results: dict, multiple: str = "8") -> tuple:
    """(encoding with the smallest mean rise from L to multiple*L, {encoding: rise}) from the results."""
    rises = {}
    for enc, row in results["summary"].items():
        if row.get(multiple) is not None:
            rises[enc] = row[multiple]["mean"] - row["1"]["mean"]
    return min(rises, key=rises.get), rises


QUIZ: dict = {
    "equivariance": {
        "question": "Self-attention with no positional encoding and no mask; you permute the input tokens. The outputs ...",
        "options": {"a": "are unchanged", "b": "are permuted the same way", "c": "change unpredictably"},
        "answer": "b",
        "why": {"a": "that is invariance, which needs a pooled readout (a sum or mean over tokens) on top (notebook 01)",
                "c": "nothing in attention depends on the order, so each output follows its own token (notebook 01)"},
    },
    "rope_relative": {
        "question": "With RoPE, the score between a query at position m and a key at position n depends on the positions through ...",
        "options": {"a": "m and n separately", "b": "m - n only", "c": "m + n", "d": "|m - n| only"},
        "answer": "b",
        "why": {"a": "R_m^T R_n = R_{n-m}: only the difference survives the dot product (notebook 06)",
                "c": "the rotations compose to a turn by the DIFFERENCE of the angles (notebook 06)",
                "d": "RoPE keeps the sign: +k and -k give different scores (unlike PE.PE of notebook 03)"},
    },
    "rope_where": {
        "question": "RoPE rotates ...",
        "options": {"a": "the input embeddings", "b": "the queries and keys", "c": "queries, keys and values",
                    "d": "the attention scores"},
        "answer": "b",
        "why": {"a": "adding/rotating at the input is what absolute encodings do; RoPE acts inside every attention layer",
                "c": "values are not rotated: only q.k needs to see the relative angle",
                "d": "a bias on the scores is T5/ALiBi; RoPE changes q and k before their dot product"},
    },
    "alibi_sign": {
        "question": "ALiBi adds to the score of query i and key j (slope m_h > 0 for head h) ...",
        "options": {"a": "+m_h |i - j|", "b": "-m_h |i - j|", "c": "-m_h (i - j)^2"},
        "answer": "b",
        "why": {"a": "a positive bias would favour FAR keys; ALiBi penalises distance",
                "c": "the penalty is linear in the distance (hence 'linear biases')"},
    },
    "learned_past_max_len": {
        "question": "A learned absolute table trained with max_len = 64 is asked for position 100. It ...",
        "options": {"a": "reuses row 63", "b": "has no row: an error naming max_len", "c": "extrapolates linearly"},
        "answer": "b",
        "why": {"a": "nothing clamps the index; in plain PyTorch it is 'index out of range in self' (notebook 04)",
                "c": "the rows are independent trained vectors; there is nothing to extrapolate from"},
    },
    "pi_vs_ntk": {
        "question": "Linear position interpolation (PI) with factor s ...",
        "options": {"a": "divides every theta_i by s", "b": "divides only the low frequencies by s",
                    "c": "multiplies the base by s^(d/(d-2))"},
        "answer": "a",
        "why": {"b": "frequency-dependent treatment is YaRN's and Llama 3's ramp (notebook 08)",
                "c": "that is NTK-aware scaling: the highest frequency is untouched, the lowest divided by s"},
    },
    "angles_dtype": {
        "question": "Why are RoPE angles m * theta computed in float32 or better, even for a bf16 model?",
        "options": {"a": "bf16 cannot tell positions like 256 and 257 apart", "b": "sin and cos do not exist in bf16",
                    "c": "it is faster"},
        "answer": "a",
        "why": {"b": "they exist; the problem is the INPUT m: bf16 has 8 significant bits (notebook 06)",
                "c": "it is slower, if anything; it is about precision (notebook 06)"},
    },
    "glossary_waitui": {
        "question": "外推 (wài tuī) is ...",
        "options": {"a": "extrapolation (to lengths beyond training)", "b": "interpolation", "c": "relative position"},
        "answer": "a",
        "why": {"b": "interpolation is 内插 (nèi chā), as in position interpolation",
                "c": "relative position is 相对位置 (xiāng duì wèi zhì)"},
    },
    "measured_flattest": {
        "question": "In notebook 07's cached run, whose mean loss rose LEAST from L to 8L?",
        "options": {"a": "nope", "b": "sinusoidal", "c": "t5", "d": "rope", "e": "alibi"},
        "answer": None,  # computed from data/ by quiz_answers()
        "why": {},
    },
}


def quiz_answers(results: dict | None = None) -> dict:
    """The right letter for every QUIZ question; measured ones are read from the results (default data/)."""
    answers = {q: item["answer"] for q, item in QUIZ.items() if item["answer"] is not None}
    results = load_results("extrapolation") if results is None else results
    flattest, _ = _measured_flattest(results)
    letters = {v: k for k, v in QUIZ["measured_flattest"]["options"].items()}
    answers["measured_flattest"] = letters[flattest]
    return answers


def show_quiz() -> None:
    """Print every question with its options."""
    for i, (qid, item) in enumerate(QUIZ.items(), 1):
        print(f"{i}. [{qid}] {item['question']}")
        for letter, text in item["options"].items():
            print(f"     {letter}) {text}")


def check_quiz(answers: dict, results: dict | None = None) -> None:
    """answers: {question id: letter}. Raises ExerciseError explaining every wrong or missing answer."""
    if not isinstance(answers, dict):
        raise ExerciseError(f"answers should be a dict like {{'equivariance': 'b', ...}}, got {type(answers).__name__}")
    unknown = sorted(set(answers) - set(QUIZ))
    if unknown:
        raise ExerciseError(f"unknown question ids {unknown}; the ids are {list(QUIZ)}")
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
            why = item["why"].get(given)
            if qid == "measured_flattest":
                _, rises = _measured_flattest(load_results("extrapolation") if results is None else results)
                chosen = item["options"][given]
                best = item["options"][right[qid]]
                why = (f"{chosen} rose by {rises[chosen]:+.3f} nats/char, {best} by {rises[best]:+.3f} "
                       f"(read data/{EXTRAPOLATION_FILE}, summary)")
            problems.append(f"[{qid}] not {given}: {why}")
    if problems:
        raise ExerciseError(f"{len(QUIZ) - len(problems)}/{len(QUIZ)} right.\n  " + "\n  ".join(problems))
    ok(f"all {len(QUIZ)} answers right")


# ------------------------------------------------------------------------------------ reference solutions

SOLUTIONS: dict = {  # exercise name -> a reference solution (kept out of the notebooks' visible cells)
    "quiz": quiz_answers,
}

CHECKS: dict = {name: globals()[f"check_{name}"] for name in SOLUTIONS}  # exercise name -> its checker
