"""The quiz of notebook 09 (posenc_lib.exercises.review): the right answers pass; the computed ones come
from the library, PyTorch and the cached results (recomputed here independently); the right letters form
no guessable pattern; every wrong or missing answer is explained."""
import math
from collections import Counter

import pytest
import torch

from posenc_lib import experiments as E
from posenc_lib.exercises import ExerciseError, review as ex


@pytest.fixture(scope="module")
def results():
    return E.load_results("extrapolation")


@pytest.fixture(scope="module")
def answers(results):
    return ex.quiz_answers(results)


def _option(qid, answers):
    return ex.QUIZ[qid]["options"][answers[qid]]


def test_at_least_twelve_questions_and_several_computed(answers):
    assert len(ex.QUIZ) >= 12 and set(answers) == set(ex.QUIZ)
    computed = [q for q, item in ex.QUIZ.items() if "solve" in item]
    assert len(computed) >= 6


def test_the_right_letters_form_no_guessable_pattern(answers):
    letters = list(answers.values())
    counts = Counter(letters)
    assert set("abcd") <= set(counts) and max(counts.values()) <= math.ceil(len(letters) / 3)
    assert all(len({a, b, c}) > 1 for a, b, c in zip(letters, letters[1:], letters[2:]))  # no run of three


def test_measured_answers_come_from_the_runs(results, answers):
    mean = {}  # recomputed from the runs, not from the summary the quiz reads
    for enc in results["summary"]:
        runs = [r["loss"] for r in results["runs"] if r["encoding"] == enc]
        mean[enc] = {m: (None if runs[0][m] is None else sum(r[m] for r in runs) / len(runs)) for m in ("1", "8")}
    rises = {e: v["8"] - v["1"] for e, v in mean.items() if v["8"] is not None}
    assert _option("measured_flattest", answers) == min(rises, key=rises.get)
    at_l = {e: v["1"] for e, v in mean.items() if e != "nope"}
    assert _option("worst_at_l", answers) == max(at_l, key=at_l.get)


def test_rope_and_scaling_answers_match_a_plain_computation(answers):
    d, l0, base = 16, 64, 10000.0
    theta = [base ** (-2 * i / d) for i in range(d // 2)]
    turns = [l0 * t / (2 * math.pi) for t in theta]
    assert _option("pairs_under_one_turn", answers) == str(sum(t < 1 for t in turns))
    i0 = next(i for i, t in enumerate(turns) if t < 1)
    assert _option("ntk_overshoot", answers) == f"{4 ** (1 - 2 * i0 / (d - 2)):.2f}"
    assert _option("dynamic_ntk_factor", answers) == f"{2 * 4 - 1}"  # factor * length / L0 - (factor - 1)
    assert _option("yarn_kept_pairs", answers) == "pair 0 only"  # no pair makes beta_fast = 32 turns in 64
    assert max(turns) < 32


def test_t5_answer_matches_the_bucket_formula(answers):
    def bucket(n, exact=16, num=32, max_distance=64):  # causal T5: n = query - key >= 0
        if n < exact:
            return n
        return min(num - 1, exact + int(math.log(n / exact) / math.log(max_distance / exact) * (num - exact)))

    first = min(n for n in range(1, 401) if bucket(n) == bucket(400))
    assert ex.QUIZ["t5_last_bucket"]["values"][answers["t5_last_bucket"]] == first


def test_the_same_map_answer_holds_for_each_kind_of_generator(answers):
    """Notebook 14's quiz question: q -> exp(mM) q and k -> exp(nM) k give scores that depend on n - m alone
    for a skew-symmetric M only; a decay, a nilpotent and a generic M give scores that change with m + n."""
    g = torch.Generator().manual_seed(0)
    a = torch.randn(4, 4, generator=g, dtype=torch.float64)
    nilpotent = torch.zeros(4, 4, dtype=torch.float64)
    nilpotent[0, 3] = 1.0
    kinds = {"skew": a - a.T, "decay": -0.3 * torch.eye(4, dtype=torch.float64), "nilpotent": nilpotent,
             "generic": a}
    q, k = torch.randn(2, 4, generator=g, dtype=torch.float64)

    def score(M, m, n):
        return float((torch.linalg.matrix_exp(m * M) @ q) @ (torch.linalg.matrix_exp(n * M) @ k))

    spread = {name: abs(score(M, 5, 7) - score(M, 0, 2)) for name, M in kinds.items()}  # same n - m = 2
    assert spread["skew"] < 1e-9 and min(v for name, v in spread.items() if name != "skew") > 1e-3, spread
    assert "skew-symmetric" in str(_option("same_map_generator", answers))


def test_the_content_cache_answer_is_what_the_library_caches(answers):
    """Notebook 14's cache question: decoding through a KV cache, FoX and PaTH keep a state beside each cached key
    (log f; w, beta), CoPE keeps none, and CoPE's positions of the same keys change with the query."""
    from posenc_lib import TinyLM
    from posenc_lib.content import CoPE
    from posenc_lib.inference import KVCache, decode_step

    ids = torch.randint(0, 23, (1, 6), generator=torch.Generator().manual_seed(2))
    kept = {}
    for name in ("cope", "fox", "path"):
        torch.manual_seed(0)
        model = TinyLM(23, encoding=name, d_model=32, num_heads=4, num_layers=1, max_len=16).eval()
        cache = KVCache(1)
        with torch.no_grad():
            for t in range(ids.shape[1]):
                decode_step(model, ids[:, t:t + 1], cache)
        kept[name] = sorted(cache.states[0] or {})
    assert kept["cope"] == [] and kept["fox"] and kept["path"], kept
    g = torch.Generator().manual_seed(3)
    q, k = torch.randn(2, 1, 1, 5, 4, generator=g, dtype=torch.float64)
    cope = CoPE(4, npos=8)
    assert not torch.allclose(cope.positions(q, k)[..., -1, :], cope.positions(-q, k)[..., -1, :])
    assert _option("content_cache", answers) == "CoPE"


def test_the_learned_question_is_about_pytorch(answers):
    with pytest.raises(IndexError, match="index out of range"):
        torch.nn.Embedding(64, 4)(torch.tensor([100]))
    assert "IndexError" in _option("learned_past_max_len", answers)
    assert "nn.Embedding" in ex.QUIZ["learned_past_max_len"]["question"]


def test_every_wrong_answer_is_explained(results, answers):
    wrong = {q: next(k for k in ex.QUIZ[q]["options"] if k != answers[q])
             for q in ("equivariance", "uniform", "measured_flattest", "ntk_overshoot")}
    with pytest.raises(ExerciseError) as err:
        ex.check_quiz(dict(answers, **wrong), results)
    text = str(err.value)
    assert f"{len(ex.QUIZ) - len(wrong)}/{len(ex.QUIZ)} right" in text
    assert "nats/char" in text and "first slow pair" in text
    assert all(f"[{q}] not {letter}" in text for q, letter in wrong.items())


@pytest.mark.parametrize("bad, match", [
    ({}, "not answered"), ({"colour": "a"}, "unknown question"), ("b", "should be a dict"),
], ids=["empty", "unknown id", "not a dict"])
def test_malformed_answers_are_explained(bad, match, results):
    with pytest.raises(ExerciseError, match=match):
        ex.check_quiz(bad, results)


def test_an_answer_outside_the_options_is_named(results, answers):
    with pytest.raises(ExerciseError, match="not one of the options"):
        ex.check_quiz(dict(answers, alibi_sign="z"), results)


@pytest.mark.parametrize("given, fragments", [
    ("c)", ["write the letter alone", "'c'"]), ("(b)", ["letter alone", "'b'"]),
    ("59", ["value of option c", "answer with the letter ('c')"]), (59, ["value of option c"]),
    (16.0, ["value of option d"]), ("q", ["not one of the options"]),
], ids=["c)", "(b)", "the value as text", "the value as a number", "another value", "another letter"])
def test_an_answer_that_is_not_a_letter_is_named(results, answers, given, fragments):
    """t5_last_bucket's options hold the distances 400, 128, 59, 16: a learner who worked one out may give it."""
    with pytest.raises(ExerciseError) as err:
        ex.check_quiz(dict(answers, t5_last_bucket=given), results)
    line = next(part for part in str(err.value).split("\n") if "[t5_last_bucket]" in part)
    assert all(f in line for f in fragments), line


def test_every_question_explains_every_wrong_option():
    for qid, item in ex.QUIZ.items():
        if "solve" in item:  # computed: every option stands for a value, a wrong one is answered with the numbers
            assert set(item["values"]) == set(item["options"]) and callable(item["explain"]), qid
        else:
            assert item["answer"] in item["options"], qid
            assert set(item["why"]) == set(item["options"]) - {item["answer"]}, qid


def test_a_computed_answer_outside_the_options_is_a_bug(monkeypatch, results):
    item = dict(ex.QUIZ["pairs_under_one_turn"], solve=lambda r: 6)
    monkeypatch.setitem(ex.QUIZ, "pairs_under_one_turn", item)
    with pytest.raises(RuntimeError, match="none of the options"):
        ex.quiz_answers(results)
