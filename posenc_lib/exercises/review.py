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
from ..experiments.results import load_model_configs
from ..i18n import Text, tr
from ..inference import usable_context_length
from ..model import ENCODING_LABELS, encoding_label
from ..relative import t5_relative_bucket
from ..scaling import extension_scaling, rope_inv_freq
from ._common import ExerciseError, ok

__all__ = ["QUIZ", "quiz_answers", "show_quiz", "check_quiz", "sheet_numbers"]


# The setting of notebooks 07-08's RoPE model: head dim 16, base 10000, trained at L0 = 64.
_DIM, _L0 = 16, 64


# ------------------------------------------------------------------ what the computed questions compute
def _deepseek_length():
    """usable_context_length of DeepSeek-V3's config as data/model_configs.json holds it (notebook 13)."""
    config = next(m["config"] for m in load_model_configs() if m["name"] == "DeepSeek-V3")
    return usable_context_length(config)


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


def _bf16_angle_error(head_dim: int = 128, position: int = 4000) -> float:
    """The largest |m theta'_i - m theta_i| at `position` when inv_freq (float32) is rounded to bf16, as
    model.to(torch.bfloat16) rounds a buffer (notebook 06, section 6), to 0.1 rad."""
    exact = rope_inv_freq(head_dim)[0]
    rounded = exact.float().to(torch.bfloat16).double()
    return round(float((position * (rounded - exact)).abs().max()), 1)


# ---------------------------------------------------------------------------------------------- the quiz
# Fixed questions: "answer" and "why" (one reason per wrong option). Computed questions: "values"
# (letter -> the value that option stands for), "solve" (results -> the right value) and "explain"
# (results -> a sentence with the computed numbers, shown for a wrong answer).
QUIZ: dict = {
    "equivariance": {
        "question": Text("Self-attention with no positional encoding and no mask; you permute the input tokens. The "
                         "outputs ...",
                         "自注意力既不加位置编码，也不加掩码；把输入 token 的顺序打乱（做一次置换），输出会……"),
        "options": {"a": Text("are unchanged", "保持不变"),
                    "b": Text("change in a way that depends on the permutation", "会变，怎么变取决于这个置换"),
                    "c": Text("are permuted the same way", "跟着做同样的置换"),
                    "d": Text("are all equal", "全都相等")},
        "answer": "c",
        "why": {"a": Text("that is invariance, which needs a pooled readout (a sum or mean over tokens) on top "
                          "(notebook 01)",
                          "那是置换不变，要在上面再加一层池化读出（对所有 token 求和或取平均）才有（notebook 01）"),
                "b": Text("each output depends on its own token and on the SET of the others, so it simply moves with "
                          "its token (notebook 01)",
                          "每个输出只取决于它自己的 token 和其余 token 组成的集合，所以它只是跟着自己的 token "
                          "换了位置（notebook 01）"),
                "d": Text("outputs differ whenever the tokens differ; attention only mixes them with order-blind "
                          "weights",
                          "只要 token 不同，输出就不同；注意力只是用与顺序无关的权重把它们混合起来")},
    },
    "rope_relative": {
        "question": Text("With RoPE, the score of a query at position m and a key at position n depends on the "
                         "positions through ...",
                         "用 RoPE 时，位置 m 的查询和位置 n 的键之间的分数，通过什么依赖于位置？"),
        "options": {"a": Text("m - n, with its sign", "m - n（带符号）"), "b": Text("|m - n| only", "只有 |m - n|"),
                    "c": Text("m and n separately", "m 和 n 各自的值"), "d": "m + n"},
        "answer": "a",
        "why": {"b": Text("RoPE keeps the sign: +k and -k give different scores (unlike PE.PE of notebook 03; 09 sec. "
                          "2)",
                          "RoPE 保留符号：+k 和 -k 给出的分数不同（这点不同于 notebook 03 的 PE.PE；见 09 第 2 节）"),
                "c": Text("R_m^T R_n = R_{n-m}: only the difference survives the dot product (notebook 06)",
                          "R_m^T R_n = R_{n-m}：点积之后只剩下位置之差（notebook 06）"),
                "d": Text("the rotations compose to a turn by the DIFFERENCE of the angles (notebook 06)",
                          "两次旋转复合起来，转过的是两个角度之差（notebook 06）")},
    },
    "alibi_sign": {
        "question": Text("ALiBi adds to the score of query i and key j (slope m_h > 0 for head h) ...",
                         "ALiBi 给查询 i 和键 j 的分数加上（头 h 的斜率 m_h > 0）……"),
        "options": {"a": "+m_h |i - j|", "b": "-m_h (i - j)^2", "c": "+m_h (i - j)", "d": "-m_h |i - j|"},
        "answer": "d",
        "why": {"a": Text("a positive bias would favour FAR keys; ALiBi penalises distance",
                          "正的偏置会偏向远处的键；ALiBi 惩罚的是距离"),
                "b": Text("the penalty is linear in the distance (hence 'linear biases')",
                          "惩罚与距离成线性关系（“线性偏置”由此得名）"),
                "c": Text("under a causal mask i - j >= 0, so this too would favour far keys",
                          "在因果掩码下 i - j >= 0，所以这样同样会偏向远处的键")},
    },
    "learned_past_max_len": {
        "question": Text("Plain PyTorch: a position table `torch.nn.Embedding(64, d)` (rows 0..63) is indexed with "
                         "position 100 on the CPU. What happens?",
                         "纯 PyTorch：在 CPU 上用位置 100 去索引位置表 `torch.nn.Embedding(64, d)`（第 0..63 行），"
                         "会发生什么？"),
        "options": {"a": Text("it returns row 63 (the index is clamped)", "返回第 63 行（索引被截到边界）"),
                    "b": "IndexError: index out of range in self",
                    "c": Text("it returns a row of zeros", "返回一行全零"),
                    "d": Text("it returns row 100 - 64 = 36 (the index wraps around)",
                              "返回第 100 - 64 = 36 行（索引绕回开头）")},
        "values": {"a": "row 63", "b": "IndexError", "c": "zeros", "d": "row 36"},
        "solve": _embedding_past_its_rows,
        "explain": lambda r: tr("torch.nn.Embedding(64, 4)(torch.tensor([100])) gives: "
                                f"{_embedding_past_its_rows(r)}; nothing clamps or wraps the index (notebook 04; "
                                "posenc_lib's LearnedEncoding raises a ValueError naming max_len first)",
                                "torch.nn.Embedding(64, 4)(torch.tensor([100])) 的结果是："
                                f"{_embedding_past_its_rows(r)}；索引既不会被截断，也不会绕回（notebook 04；"
                                "posenc_lib 的 LearnedEncoding 会先抛出一个点名 max_len 的 ValueError）"),
    },
    "sinusoidal_at_once": {
        "question": Text("In notebook 07 the sinusoidal model is worse than a unigram guess already at 2L. Why at "
                         "once?",
                         "notebook 07 里，正弦位置编码的模型到 2L 就已经不如一元（unigram）猜测了。为什么坏得这么快？"),
        "options": {"a": Text("past L its slow dimensions take values never seen in training, and they are added to "
                              "every token's input, so every layer is off-distribution at every new position",
                              "过了 L，它的慢维度取到训练时从没见过的值，而这些值加在每个 token 的输入上，"
                              "于是在每个新位置上，每一层的输入都偏离了训练分布"),
                    "b": Text("its table has no rows past L", "它的表在 L 之后没有行"),
                    "c": Text("sin and cos repeat, so positions past L collide with trained ones",
                              "sin 和 cos 会周期重复，L 之后的位置与训练过的位置撞在了一起"),
                    "d": Text("a longer window has more keys, so the softmax gets flatter",
                              "窗口越长，键越多，softmax 就越平")},
        "answer": "a",
        "why": {"b": Text("that is the learned table; the sinusoidal formula gives a vector for any position "
                          "(notebook 02)",
                          "那是可学习的位置表；正弦公式对任何位置都能给出向量（notebook 02）"),
                "c": Text("the slow dimensions' wavelengths reach 2 pi * 10000 positions: within 8L nothing repeats; "
                          "the values are new, not collisions (notebook 02)",
                          "慢维度的波长长达 2 pi * 10000 个位置：8L 以内什么都不会重复；这些值是新的，"
                          "而不是撞上了旧的（notebook 02）"),
                "d": Text("every encoding gets more keys, yet ALiBi and T5 hold at 2L (notebook 07)",
                          "每种编码的键都变多了，可 ALiBi 和 T5 在 2L 处照样稳得住（notebook 07）")},
    },
    "t5_last_bucket": {
        "question": Text("Notebook 07's T5 bias (causal, 32 buckets, max_distance 64). A key 400 characters back gets "
                         "the bias of one bucket. From which distance on do keys share that bucket?",
                         "notebook 07 的 T5 偏置（因果，32 个桶，max_distance 64）。往前 400 个字符处的键，"
                         "用的是某一个桶的偏置。从多远的距离起，所有键都共用这个桶？"),
        "options": {"a": Text("from 400 on (each far distance has its own bucket)",
                              "从 400 起（每个远距离都有自己的桶）"),
                    "b": Text("from 128 on", "从 128 起"),
                    "c": Text("from 59 on: every key further back, trained only on distances 59-63",
                              "从 59 起：再往前的所有键都落在这个桶里，而它只在距离 59-63 上训练过"),
                    "d": Text("from 16 on (all distances past the exact buckets)", "从 16 起（精确桶之后的所有距离）")},
        "values": {"a": 400, "b": 128, "c": 59, "d": 16},
        "solve": _t5_last_bucket_starts,
        "explain": lambda r: tr("t5_relative_bucket(-n, bidirectional=False, num_buckets=32, max_distance=64) gives "
                                f"the last bucket to every n >= {_t5_last_bucket_starts(r)}: at 8L hundreds of keys "
                                "share one bias learned from a handful of distances (notebooks 05, 07)",
                                f"t5_relative_bucket(-n, bidirectional=False, num_buckets=32, max_distance=64) 把所有 "
                                f"n >= {_t5_last_bucket_starts(r)} 都分进最后一个桶：到了 8L，几百个键共用同一个偏置，"
                                "而它只从寥寥几个距离上学来（notebook 05、07）"),
    },
    "pairs_under_one_turn": {
        "question": Text("RoPE with head dim 16, base 10000, trained at L0 = 64 (notebooks 07-08): how many of its 8 "
                         "pairs make less than one full turn over L0?",
                         "RoPE，头维度 16，底数 10000，训练长度 L0 = 64（notebook 07-08）：8 对里有几对在 L0 内"
                         "转不满一整圈？"),
        "options": {"a": "2", "b": "5", "c": "8", "d": "3"},
        "values": {"a": 2, "b": 5, "c": 8, "d": 3},
        "solve": _pairs_under_one_turn,
        "explain": lambda r: (tr("turns L0 * theta_i / 2 pi = ", "各对在 L0 内转的圈数 L0 * theta_i / 2 pi = ")
                              + ", ".join(f"{t:.3g}" for t in _turns_in_l0().tolist())
                              + tr(f": {_pairs_under_one_turn(r)} are below 1 (notebook 08, sec. 1)",
                                   f"：其中 {_pairs_under_one_turn(r)} 对不到 1 圈（notebook 08 第 1 节）")),
    },
    "yarn_kept_pairs": {
        "question": Text("YaRN at factor 4 on that model (L0 = 64, d = 16, beta_fast 32, beta_slow 1): which pairs "
                         "keep their frequency untouched?",
                         "在这个模型上用因子为 4 的 YaRN（L0 = 64，d = 16，beta_fast 32，beta_slow 1）："
                         "哪些对的频率原封不动？"),
        "options": {"a": Text("none", "一对也没有"),
                    "b": Text("pairs 0-2 (those with more than one turn in L0)",
                              "第 0-2 对（在 L0 内转了不止一圈的那些）"),
                    "c": Text("every pair", "所有对"),
                    "d": Text("pair 0 only", "只有第 0 对")},
        "values": {"a": (), "b": (0, 1, 2), "c": tuple(range(_DIM // 2)), "d": (0,)},
        "solve": _yarn_kept_pairs,
        "explain": lambda r: tr(f"rope_inv_freq with YaRN's scaling leaves only pairs {list(_yarn_kept_pairs(r))} "
                                f"untouched: no pair makes beta_fast = 32 turns in {_L0} tokens (pair 0 makes "
                                f"{float(_turns_in_l0()[0]):.1f}), so the ramp starts at pair 0 (notebook 08, sec. 2)",
                                "按 YaRN 缩放的 rope_inv_freq 中，频率原封不动的只有这些对："
                                f"{list(_yarn_kept_pairs(r))}；没有哪一对能在 {_L0} 个 token 内转满 beta_fast = 32 圈"
                                f"（第 0 对只转了 {float(_turns_in_l0()[0]):.1f} 圈），"
                                "所以斜坡从第 0 对就开始了（notebook 08 第 2 节）"),
    },
    "ntk_overshoot": {
        "question": Text("NTK-aware at factor 4 on that model, on a window of 4 * L0: the slow pairs turn past the "
                         "angles they saw in training. By how much at most (turns over 4 L0 / turns over L0)?",
                         "在这个模型上用因子为 4 的 NTK-aware 缩放，窗口长 4 * L0："
                         "慢速对转到的角度会超出训练时见过的范围。最多超出多少（4 L0 内的圈数 / L0 内的圈数）？"),
        "options": {"a": Text("1.00 (they stay within their trained angles)", "1.00（仍在训练过的角度范围内）"),
                    "b": "4.00", "c": "2.21", "d": "1.45"},
        "values": {"a": 1.0, "b": 4.0, "c": 2.21, "d": 1.45},
        "solve": _ntk_overshoot,
        "explain": lambda r: tr("factor * theta'_i / theta_i = 4 ** (1 - 2 i / (d - 2)), largest at the first slow "
                                f"pair: {_ntk_overshoot(r):.2f} (notebook 08, sec. 4)",
                                f"factor * theta'_i / theta_i = 4 ** (1 - 2 i / (d - 2))，在第一个慢速对处最大："
                                f"{_ntk_overshoot(r):.2f}（notebook 08 第 4 节）"),
    },
    "ntk_overshoot_cause": {
        "question": Text("At a fixed factor, what sets how far NTK-aware's slow pairs overshoot their trained angles?",
                         "因子固定时，NTK-aware 的慢速对超出训练角度多少，是由什么决定的？"),
        "options": {"a": Text("where the slow pairs start in the head, i.e. L0 against the base",
                              "慢速对从注意力头的第几对开始，也就是 L0 相对于底数的大小"),
                    "b": Text("the number of pairs: more pairs make the geometric steps finer",
                              "对的数量：对越多，几何级数的每一步越小"),
                    "c": Text("the attention factor", "注意力因子（attention factor）"),
                    "d": Text("nothing: NTK-aware keeps every pair within its trained angles",
                              "没有这回事：NTK-aware 让每一对都留在训练过的角度以内")},
        "answer": "a",
        "why": {"b": Text("the overshoot is factor ** (1 - 2 i0 / (d - 2)) at the first slow pair i0; 2 i0 / (d - 2) "
                          "tends to ln(L0 / 2 pi) / ln(base) as d grows. At L0 = 64 it is 2.21 at d = 16 and 2.75 at "
                          "d = 128: more pairs, MORE overshoot (notebook 08, sec. 4)",
                          "超出量在第一个慢速对 i0 处为 factor ** (1 - 2 i0 / (d - 2))；d 增大时，2 i0 / (d - 2) 趋于 "
                          "ln(L0 / 2 pi) / ln(base)。L0 = 64 时，d = 16 为 2.21，d = 128 为 2.75："
                          "对越多，超出反而越多（notebook 08 第 4 节）"),
                "c": Text("NTK-aware has none (attention factor 1); only YaRN rescales the scores",
                          "NTK-aware 根本没有这一项（注意力因子为 1）；只有 YaRN 会重新缩放分数"),
                "d": Text("only its slowest pair is slowed by the full factor; the others overshoot. YaRN's authors "
                          "make this point about NTK-aware themselves (notebook 08)",
                          "只有最慢的那一对放慢了整整 factor 倍，其余各对都会超出。YaRN 的作者自己就指出过 NTK-aware "
                          "的这个问题（notebook 08）")},
    },
    "dynamic_ntk_factor": {
        "question": Text("Dynamic NTK configured with factor 2 on that model reads a window of 4 * L0 = 256 tokens in "
                         "one pass. Its frequencies are those of static NTK-aware with factor ...",
                         "在这个模型上配置因子为 2 的动态 NTK，一次读入 4 * L0 = 256 个 token 的窗口。"
                         "它的频率等于静态 NTK-aware 取因子为多少时的频率？"),
        "options": {"a": "2", "b": "4", "c": "8", "d": "7"},
        "values": {"a": 2.0, "b": 4.0, "c": 8.0, "d": 7.0},
        "solve": _dynamic_as_ntk,
        "explain": lambda r: tr("factor' = factor * length / L0 - (factor - 1) with factor 2, length 256, L0 64: "
                                f"{_dynamic_as_ntk(r):g}; rope_inv_freq gives the same frequencies (notebook 08, sec. "
                                "2)",
                                "factor' = factor * length / L0 - (factor - 1)，代入 factor 2、length 256、L0 64："
                                f"{_dynamic_as_ntk(r):g}；rope_inv_freq 算出的频率也相同"
                                "（notebook 08 第 2 节）"),
    },
    "length_dependent": {
        "question": Text("Of dynamic NTK, YaRN and Llama 3.1, which gives the same position a different rotation "
                         "depending on how long the whole sequence is?",
                         "动态 NTK、YaRN 和 Llama 3.1 中，哪一种会让同一个位置的旋转随整个序列的长度而变？"),
        "options": {"a": "YaRN", "b": Text("dynamic NTK", "动态 NTK"), "c": "Llama 3.1",
                    "d": Text("all three", "三种都会")},
        "answer": "b",
        "why": {"a": Text("YaRN's frequencies are fixed by its factor and L0; the sequence length does not enter",
                          "YaRN 的频率由它的因子和 L0 确定，序列长度不参与"),
                "c": Text("Llama 3.1's frequencies are fixed by its factor, L0 and the two wavelength thresholds",
                          "Llama 3.1 的频率由它的因子、L0 和两个波长阈值确定"),
                "d": Text("only dynamic NTK recomputes its base from the current length (so cached keys rotated under "
                          "an earlier length no longer match: YaRN's authors cache keys before RoPE for it)",
                          "只有动态 NTK 会按当前长度重新计算底数（所以按先前长度旋转后缓存的键就对不上了："
                          "YaRN 的作者为此改在 RoPE 之前缓存键）")},
    },
    "yarn_temperature": {
        "question": Text("YaRN and Llama 3.1 both keep the fast pairs and fully interpolate the slow ones. What does "
                         "YaRN do that Llama 3.1 does not?",
                         "YaRN 和 Llama 3.1 都保留快速对、对慢速对做完全插值。YaRN 多做了哪件 Llama 3.1 没做的事？"),
        "options": {"a": Text("it divides every frequency by the factor", "把每个频率都除以因子"),
                    "b": Text("it raises the base", "调大底数"),
                    "c": Text("it scales the attention logits, by (0.1 ln s + 1)^2",
                              "缩放注意力 logits，乘以 (0.1 ln s + 1)^2"),
                    "d": Text("it recomputes its factor from the sequence length", "按序列长度重新计算因子")},
        "answer": "c",
        "why": {"a": Text("that is PI; both keep the fast pairs", "那是 PI；两者都保留快速对"),
                "b": Text("that is NTK-aware (and ABF, raising the base before training)",
                          "那是 NTK-aware（还有 ABF，在训练前就调大底数）"),
                "d": Text("that is dynamic scaling (dynamic NTK, or YaRN's optional dynamic variant), not YaRN as "
                          "used here",
                          "那是动态缩放（动态 NTK，或 YaRN 可选的动态变体），不是这里用的 YaRN")},
    },
    "pi_justification": {
        "question": Text("How do Chen et al. (2023) justify position interpolation?",
                         "Chen 等人（2023）用什么来论证位置插值的合理性？"),
        "options": {"a": Text("interpolation keeps the fast pairs' speed", "插值保留了快速对的转速"),
                    "b": Text("it needs no fine-tuning", "它不需要微调"),
                    "c": Text("NTK theory: networks need high frequencies", "NTK 理论：网络需要高频"),
                    "d": Text("a bound: attention scores at interpolated positions are bounded far more tightly "
                              "(~600x) than at extrapolated ones",
                              "一个上界：插值位置上注意力分数的上界，比外推位置上的紧得多（约 600 倍）")},
        "answer": "d",
        "why": {"a": Text("PI slows EVERY pair, the fast ones included; that it loses fast-pair resolution is "
                          "bloc97's and YaRN's critique of PI, which led to NTK-aware and YaRN",
                          "PI 把每一对都放慢了，快速对也不例外；快速对因此丢了分辨率，这正是 bloc97 和 YaRN 对 PI 的"
                          "批评，NTK-aware 和 YaRN 也由此而来"),
                "b": Text("the paper fine-tunes (about 1,000 steps); notebook 08 shows PI without it is poor",
                          "论文做了微调（约 1,000 步）；notebook 08 表明不微调的 PI 效果很差"),
                "c": Text("that is the argument behind NTK-aware scaling (bloc97), against PI",
                          "那是 NTK-aware 缩放（bloc97）背后的论点，恰恰是用来反驳 PI 的")},
    },
    "uniform": {
        "question": Text("Which method slows every RoPE pair by the same factor?",
                         "哪种方法把 RoPE 的每一对都放慢同样的倍数？"),
        "options": {"a": "NTK-aware", "b": Text("position interpolation (PI)", "位置插值（PI）"), "c": "YaRN",
                    "d": "Llama 3.1"},
        "answer": "b",
        "why": {"a": Text("NTK-aware is non-uniform too: base * s^(d/(d-2)) keeps the fastest pair and slows the "
                          "slowest by s, geometrically in between",
                          "NTK-aware 也不均匀：base * s^(d/(d-2)) 让最快的一对不变，最慢的一对放慢 s 倍，"
                          "中间按几何级数过渡"),
                "c": Text("YaRN ramps from untouched (fast pairs) to theta / s (slow pairs)",
                          "YaRN 从原封不动（快速对）渐变到 theta / s（慢速对）"),
                "d": Text("Llama 3.1 keeps short wavelengths, divides long ones by s, and blends in between",
                          "Llama 3.1 保留短波长，长波长除以 s，两者之间平滑过渡")},
    },
    "angles_dtype": {
        "question": Text("Why are RoPE angles m * theta computed in float32 or better, even for a bf16 model?",
                         "为什么即使是 bf16 模型，RoPE 的角度 m * theta 也要用 float32 或更高的精度来算？"),
        "options": {"a": Text("bf16 cannot tell positions like 256 and 257 apart", "bf16 分不清 256 和 257 这样的位置"),
                    "b": Text("sin and cos do not exist in bf16", "bf16 里没有 sin 和 cos"),
                    "c": Text("it is faster", "这样更快"),
                    "d": Text("bf16 cannot hold numbers above 65504", "bf16 存不下大于 65504 的数")},
        "answer": "a",
        "why": {"b": Text("they exist; the problem is the INPUT m: bf16 has 8 significant bits (notebook 06)",
                          "它们是有的；问题出在输入 m 上：bf16 只有 8 位有效位（notebook 06）"),
                "c": Text("it is slower, if anything; it is about precision (notebook 06)",
                          "真要说的话反而更慢；这关乎精度（notebook 06）"),
                "d": Text("bf16 has float32's exponent range (fp16 is the one that stops at 65504); its problem is "
                          "precision, not range",
                          "bf16 的指数范围与 float32 相同（上限为 65504 的是 fp16）；它的问题在精度，不在范围")},
    },
    "kv_cache_rope": {
        "question": Text("Generating with RoPE and a KV cache (transformers' DynamicCache): the cached keys are ...",
                         "用 RoPE 和 KV 缓存（transformers 的 DynamicCache）生成时，缓存里的键……"),
        "options": {"a": Text("stored unrotated, and all rotated by the new query's position at every step",
                              "未旋转地存着，每一步都按新查询的位置整体旋转"),
                    "b": Text("rotated by the cache's length at every step", "每一步都按缓存长度旋转"),
                    "c": Text("rotated by position 0; the new query carries the whole offset",
                              "按位置 0 旋转；偏移全由新查询承担"),
                    "d": Text("rotated once, by their own positions, when they are made; the new query by its own "
                              "position",
                              "在算出时（存入缓存之前）按各自的位置旋转一次，之后不再改动；"
                              "新查询按它自己的位置旋转")},
        "answer": "d",
        "why": {"a": Text("every key would then sit at the query's position: q.k would lose the distance m - n "
                          "(notebook 12 sec. 1)",
                          "那样每个键都会落在查询的位置上：q.k 就丢掉了距离 m - n（notebook 12 第 1 节）"),
                "b": Text("the cache's length is the next query's position, not the keys': a key's rotation depends "
                          "on its own position only, so it is applied once (notebook 12 sec. 1)",
                          "缓存长度是下一个查询的位置，不是键的位置：键的旋转只取决于它自己的位置，所以只转一次"
                          "（notebook 12 第 1 节）"),
                "c": Text("with every key at 0 the score depends on m - 0 = m for every key: the distances are lost "
                          "(notebook 12 sec. 1)",
                          "所有键都在 0 时，每个键的分数都只取决于 m - 0 = m：距离信息丢了（notebook 12 第 1 节）")},
    },
    "left_pad_positions": {
        "question": Text("A left-padded prompt in a batch has the attention mask [0, 0, 1, 1, 1]. Which position ids "
                         "does transformers' generate() give it?",
                         "批次中一个左填充的提示词，注意力掩码为 [0, 0, 1, 1, 1]。transformers 的 generate() "
                         "给它的位置 id 是？"),
        "options": {"a": "[0, 1, 2, 3, 4]", "b": "[0, 0, 0, 1, 2]", "c": "[2, 3, 4, 5, 6]", "d": "[-1, -1, 0, 1, 2]"},
        "answer": "b",
        "why": {"a": Text("that numbers the pads too: the first real token would sit at 2, not 0 (harmless for RoPE "
                          "and ALiBi only if every later step is shifted alike; notebook 12 sec. 2)",
                          "这把填充也编了号：第一个真实 token 会在 2 而不是 0（只有后续每一步都同样平移时，对 RoPE "
                          "和 ALiBi 才无害；notebook 12 第 2 节）"),
                "c": Text("the positions count the real tokens from 0: cumsum(mask) - 1 (notebook 12 sec. 2)",
                          "位置从 0 开始只数真实 token：cumsum(mask) - 1（notebook 12 第 2 节）"),
                "d": Text("cumsum(mask) - 1 is -1 at the leading pads; generate() writes 0 there (masked, never read; "
                          "notebook 12 sec. 2)",
                          "cumsum(mask) - 1 在开头的填充处是 -1；generate() 在那里写 0（被屏蔽，不会被读到；"
                          "notebook 12 第 2 节）")},
    },
    "streaming_positions": {
        "question": Text("StreamingLLM with 4 sink tokens and a window of 8 has read 100 tokens. Which position does "
                         "RoPE use for the newest one?",
                         "StreamingLLM 保留 4 个作为注意力汇聚点（attention sink）的 token、窗口为 8，"
                         "已经读了 100 个 token。RoPE 对最新那个 token 用的位置是？"),
        "options": {"a": "99", "b": "7", "c": "11", "d": "12"},
        "answer": "c",
        "why": {"a": Text("99 is its place in the text; StreamingLLM counts positions within the cache (Xiao et al. "
                          "2023; notebook 12 sec. 3)",
                          "99 是它在文本中的位置；StreamingLLM 按缓存内计数位置（Xiao 等人 2023；"
                          "notebook 12 第 3 节）"),
                "b": Text("the 4 sinks come first: slots 0-3, then the 8 window slots 4-11 (notebook 12 sec. 3)",
                          "4 个注意力汇聚点在最前面：槽位 0-3，然后是窗口的 8 个槽位 4-11（notebook 12 第 3 节）"),
                "d": Text("12 tokens are cached, in slots 0-11; 12 would be the NEXT token's slot (notebook 12 sec. 3)",
                          "缓存里有 12 个 token，占槽位 0-11；12 是下一个 token 的槽位（notebook 12 第 3 节）")},
    },
    "cache_scaling_switch": {
        "question": Text("A dynamic-NTK model decodes past its trained length L0 with a cache of rotated keys (what "
                         "transformers' DynamicCache holds). What happens to the scores?",
                         "一个动态 NTK 模型用存着已旋转键的缓存（transformers 的 DynamicCache 就是这样）"
                         "解码到训练长度 L0 之后。分数会怎样？"),
        "options": {"a": Text("keys rotated under earlier, smaller bases meet queries under a larger one: the scores "
                              "no longer depend on m - n alone",
                              "用更早、更小的底数旋转的键遇上用更大底数的查询：分数不再只取决于 m - n"),
                    "b": Text("nothing: RoPE scores depend on m - n only", "不会怎样：RoPE 的分数只取决于 m - n"),
                    "c": Text("transformers drops the cache at L0 + 1 and recomputes everything",
                              "transformers 在 L0 + 1 处丢弃缓存并全部重算"),
                    "d": Text("the model switches back to the trained base", "模型切回训练时的底数")},
        "answer": "a",
        "why": {"b": Text("only while every position is rotated with the same frequencies; past L0 dynamic NTK changes "
                          "them at every new length (notebook 12 sec. 4 measures the drift)",
                          "前提是所有位置都用同一组频率旋转；超过 L0 后，动态 NTK 每到一个新长度都会改频率"
                          "（notebook 12 第 4 节测量了这种偏离）"),
                "c": Text("that is Phi-3 with LongRoPE, which switches factor sets once, at L0 + 1 (notebook 12 "
                          "sec. 4)",
                          "那是用 LongRoPE 的 Phi-3，它只在 L0 + 1 处切换一次因子组（notebook 12 第 4 节）"),
                "d": Text("past L0 the base grows with the length; it is the trained one only up to L0 (notebook 08)",
                          "超过 L0 后底数随长度增大；只有在 L0 以内才是训练时的底数（notebook 08）")},
    },
    "glossary_length_extrapolation": {
        "question": Text("长度外推 (chángdù wàituī) is ...", "“长度外推”指的是……"),
        "options": {"a": Text("position interpolation (PI)", "位置插值（PI）"),
                    "b": Text("context extension by fine-tuning", "通过微调做上下文扩展"),
                    "c": Text("length extrapolation: using a model on inputs longer than it was trained on",
                              "length extrapolation：把模型用在比训练时更长的输入上"),
                    "d": Text("the rotary base", "旋转底数")},
        "answer": "c",
        "why": {"a": Text("position interpolation is 位置插值 (also 位置内插)",
                          "那是位置插值（也叫位置内插），英文 position interpolation"),
                "b": Text("that is 上下文扩展 with 微调 (fine-tuning); 外推 means going beyond the trained range",
                          "那是靠微调（fine-tuning）做上下文扩展（context extension）；外推指的是超出训练时的范围"),
                "d": Text("the rotary base is 旋转底数", "那是旋转底数，英文 rotary base")},
    },
    "measured_flattest": {
        "question": Text("In notebook 07's cached run, whose mean loss rose LEAST from L to 8L?",
                         "在 notebook 07 缓存的那次运行里，从 L 到 8L，谁的平均损失上升得最少？"),
        "options": {letter: ENCODING_LABELS[e]
                    for letter, e in zip("abcde", ("t5", "alibi", "nope", "rope", "sinusoidal"))},
        "values": {"a": "t5", "b": "alibi", "c": "nope", "d": "rope", "e": "sinusoidal"},
        "solve": lambda r: _measured_flattest(r)[0],
        "explain": lambda r: (tr("rise from L to 8L: ", "从 L 到 8L 的上升：")
                              + ", ".join(f"{encoding_label(e)} {v:+.3f}" for e, v in _rises(r).items())
                              + tr(f" nats/char (read data/{EXTRAPOLATION_FILE}, summary)",
                                   f" nats/char（读自 data/{EXTRAPOLATION_FILE} 的 summary）")),
    },
    "worst_at_l": {
        "question": Text("In notebook 07's cached run, which encoding WITH position information had the highest loss "
                         "at the training length L itself?",
                         "在 notebook 07 缓存的那次运行里，在带位置信息的编码中，"
                         "哪一种在训练长度 L 本身上的损失最高？"),
        "options": {letter: ENCODING_LABELS[e]
                    for letter, e in zip("abcde", ("t5", "sinusoidal", "learned", "alibi", "rope"))},
        "values": {"a": "t5", "b": "sinusoidal", "c": "learned", "d": "alibi", "e": "rope"},
        "solve": _worst_with_position_at_l,
        "explain": lambda r: (tr("loss at L: ", "L 处的损失：")
                              + ", ".join(f"{encoding_label(e)} {row['1']['mean']:.3f}" for e, row in
                                          r["summary"].items() if e != "nope")
                              + tr(f" nats/char (data/{EXTRAPOLATION_FILE}); notebook 07 sec. 7 compares this with "
                                   "the ALiBi paper",
                                   f" nats/char（data/{EXTRAPOLATION_FILE}）；notebook 07 第 7 节拿它和 ALiBi 论文"
                                   "做了对比")),
    },

    # ------------------------------------------------------------- the whys of notebooks 06, 07, 08 and 11
    "rope_won": {
        "question": Text("Notebook 07's plain RoPE rose the most past L, yet nearly every open model uses RoPE. Why?",
                         "notebook 07 里朴素 RoPE 超过 L 后上升得最多，可几乎所有开放模型都用 RoPE。为什么？"),
        "options": {"a": Text("at scale it extrapolates far past its training length without any change",
                              "规模大了，它不做任何改动就能远远外推到训练长度之外"),
                    "b": Text("it trains well within the length (EleutherAI's comparisons), costs no parameters and "
                              "no bias term, keeps plain attention kernels and KV caches, and long contexts are "
                              "reached by rescaling it",
                              "它在训练长度以内训练得好（EleutherAI 的比较），没有参数、没有偏置项，普通的注意力内核和 "
                              "KV 缓存照用，长上下文则靠对它做缩放"),
                    "c": Text("it is an absolute encoding, which transfers best", "它是绝对位置编码，迁移性最好"),
                    "d": Text("it gives every position its own learned vector", "它给每个位置一个可学习的向量")},
        "answer": "b",
        "why": {"a": Text("no: long-context RoPE models rescale it (PI, YaRN, a larger base; notebook 08); 07 measured "
                          "plain RoPE failing past L",
                          "不对：长上下文的 RoPE 模型都要对它做缩放（PI、YaRN、更大的底数；notebook 08）；07 测到朴素 "
                          "RoPE 超过 L 就失效"),
                "c": Text("RoPE's score is relative: it depends on m - n only (notebook 06)",
                          "RoPE 的分数是相对的：只依赖 m - n（notebook 06）"),
                "d": Text("that is a learned table (notebook 04); RoPE has no parameters",
                          "那是可学习的位置表（notebook 04）；RoPE 没有参数")},
    },
    "loss_not_use": {
        "question": Text("A model's loss stays flat from L to 8L (notebook 07). What does that show?",
                         "一个模型的损失从 L 到 8L 一直平坦（notebook 07）。这说明了什么？"),
        "options": {"a": Text("the model uses the context beyond L", "模型用上了 L 之前更远的上下文"),
                    "d": Text("the new positions do no harm; whether far context is used needs a probe, and 07's "
                              "retrieval probe fails even within L",
                              "新位置没有造成损害；远处的上下文有没有被利用，要靠探针来测，而 07 的检索探针即使在 L "
                              "以内也失败了"),
                    "c": Text("the model can retrieve a string written 8L back", "模型能检索 8L 之前写下的字符串"),
                    "b": Text("the encoding is relative", "这种编码是相对的")},
        "answer": "d",
        "why": {"a": Text("with exactly L characters of context every model does at least as well (07's sliding "
                          "baseline): the far context never helped",
                          "只给恰好 L 个字符的上下文时，每个模型都至少一样好（07 的滑动窗口基线）："
                          "远处的上下文从没帮上忙"),
                "c": Text("07's probe: no model copies a repeated random string, not even within L",
                          "07 的探针：没有模型会复制重复出现的随机字符串，即使在 L 以内也不会"),
                "b": Text("RoPE is relative and its loss rose the most; flatness is measured, not implied by a name",
                          "RoPE 是相对的，它的损失却上升得最多；平不平坦要靠测量，不能从名字推断")},
    },
    "ntk_no_finetune": {
        "question": Text("Read RoPE as writing the position in base beta (Su). Why does NTK-aware scaling work "
                         "without fine-tuning, where PI needs it?",
                         "把 RoPE 看成用 beta 进制书写位置（苏剑林的读法）。为什么 NTK-aware 缩放不微调也能用，"
                         "而 PI 需要微调？"),
        "options": {"a": Text("it divides the position by s, like PI, but more gently",
                              "它像 PI 一样把位置除以 s，只是更温和"),
                    "b": Text("it sharpens the softmax", "它让 softmax 更尖锐"),
                    "c": Text("it changes the base: the lowest digit (the fastest pair) keeps its exact angles and "
                              "only the high digits slow down, while PI divides the number and changes every digit",
                              "它改的是进制：最低位（最快的一对）的角度完全不变，只有高位变慢；而 PI 把这个数除以 s，"
                              "每一位都变了"),
                    "d": Text("it adds new learned frequencies", "它加入了新的可学习频率")},
        "answer": "c",
        "why": {"a": Text("PI divides every pair's angle by s; NTK-aware divides pair i's by s^(2i/(d-2)): 1 for "
                          "the fastest pair (notebook 08, section 2)",
                          "PI 把每一对的角度都除以 s；NTK-aware 把第 i 对的除以 s^(2i/(d-2))："
                          "最快的一对是 1（notebook 08 第 2 节）"),
                "b": Text("that is YaRN's attention factor, not NTK-aware's",
                          "那是 YaRN 的注意力因子，不是 NTK-aware 的"),
                "d": Text("NTK-aware only raises the base b to b s^(d/(d-2)); nothing is learned",
                          "NTK-aware 只是把底数 b 提到 b s^(d/(d-2))；没有任何可学习的东西")},
    },
    "yarn_frame_pi": {
        "question": Text("The YaRN paper writes every method as RoPE turning pair i by g(m) h(theta_i). Position "
                         "interpolation is ...",
                         "YaRN 论文把每种方法都写成 RoPE 让第 i 对转过 g(m) h(theta_i)。位置插值是……"),
        "options": {"a": Text("g(m) = m / s, h(theta) = theta: the same angles as g(m) = m, h(theta) = theta / s",
                              "g(m) = m / s，h(theta) = theta：与 g(m) = m，h(theta) = theta / s 的角度相同"),
                    "b": Text("g(m) = m, h(theta) = theta * s", "取 g(m) = m，h(theta) = theta * s"),
                    "c": Text("g(m) = m + s, h(theta) = theta", "取 g(m) = m + s，h(theta) = theta"),
                    "d": Text("g(m) = m, with a new base b s^(d/(d-2))", "g(m) = m，底数换成 b s^(d/(d-2))")},
        "answer": "a",
        "why": {"b": Text("that speeds every pair up s times: the opposite of interpolating",
                          "那会让每一对都快 s 倍：与插值正好相反"),
                "c": Text("a shift of every position changes no RoPE score at all (the score depends on m - n)",
                          "所有位置一起平移，RoPE 的分数一个都不会变（分数只依赖 m - n）"),
                "d": Text("that is NTK-aware scaling", "那是 NTK-aware 缩放")},
    },
    "log_n_entropy": {
        "question": Text("Random scores over n keys: as n grows, the softmax's entropy ... (notebook 08)",
                         "n 个键上的随机分数：n 越大，softmax 的熵……（notebook 08）"),
        "options": {"a": Text("stays the same", "保持不变"),
                    "b": Text("grows like ln n; multiplying the scores by ln n / ln L0 (log-n scaling, Su) holds it "
                              "near its value at L0, the idea behind YaRN's, LongRoPE's and Llama 4's temperatures",
                              "像 ln n 一样增长；把分数乘以 ln n / ln L0（log-n 缩放，苏剑林）"
                              "能让它保持在 L0 处的水平附近，这正是 YaRN、LongRoPE 和 Llama 4 温度背后的想法"),
                    "c": Text("shrinks, so long contexts make attention sharper", "变小，所以上下文越长注意力越尖锐"),
                    "d": Text("grows like n", "像 n 一样增长")},
        "answer": "b",
        "why": {"a": Text("the same scores spread over more keys: notebook 08 measures it rising by about ln 64 from "
                          "L0 to 64 L0",
                          "同样的分数被摊到更多的键上：notebook 08 测到从 L0 到 64 L0 上升了约 ln 64"),
                "c": Text("the opposite: the weight is diluted over more keys", "恰好相反：权重被摊到更多的键上"),
                "d": Text("the entropy of n values is at most ln n", "n 个值的熵至多是 ln n")},
    },
    "inv_freq_bf16": {
        "question": Text("A RoPE module keeps inv_freq (head_dim 128) as a buffer; model.to(torch.bfloat16) rounds "
                         "it. By how much is the largest angle off at position 4000? (compute it)",
                         "一个 RoPE 模块把 inv_freq（head_dim 128）存成 buffer；model.to(torch.bfloat16) 把它舍入了。"
                         "位置 4000 处最大的角度误差是多少？（请算出来）"),
        "options": {"a": Text("0 rad: bf16 keeps float32's range", "0 弧度：bf16 与 float32 的范围相同"),
                    "b": Text("about 0.005 rad", "约 0.005 弧度"), "c": Text("about 4.9 rad", "约 4.9 弧度"),
                    "d": Text("about 500 rad", "约 500 弧度")},
        "values": {"a": 0.0, "b": 0.005, "c": 4.9, "d": 500.0},
        "solve": lambda _r: _bf16_angle_error(),
        "explain": lambda _r: tr(f"rounded to bf16 (8 significant bits), theta_1 is off by about 0.3%, and 4000 "
                                 f"theta_1 by {_bf16_angle_error():.1f} rad; keep inv_freq in float32 (notebook 06, "
                                 "section 6)",
                                 f"舍入到 bf16（8 位有效位）后，theta_1 偏了约 0.3%，4000 theta_1 偏了 "
                                 f"{_bf16_angle_error():.1f} 弧度；inv_freq 要保持 float32（notebook 06 第 6 节）"),
    },
    "vit_vs_mrope": {
        "question": Text("In Qwen2-VL, the vision encoder's 2-D RoPE and the language model's M-RoPE ...",
                         "在 Qwen2-VL 里，视觉编码器的二维 RoPE 和语言模型的 M-RoPE……"),
        "options": {"b": Text("are one RoPE applied once", "是同一个 RoPE，只做一次"),
                    "a": Text("turn different tokens: the encoder each patch by its (row, col) in its image, the "
                              "language model each merged 2 x 2 block by (t, h, w) continuing the text's positions",
                              "旋转的是不同的 token：编码器按图像块在图中的（行，列）旋转每个图像块，"
                              "语言模型按接着文本位置往下编的 (t, h, w) 旋转每个合并后的 2 x 2 块"),
                    "c": Text("both give text tokens three different coordinates", "两者都给文本 token 三个不同的坐标"),
                    "d": Text("both number the patches with one running index", "两者都用一个递增下标给图像块编号")},
        "answer": "a",
        "why": {"b": Text("the encoder's ids restart at (0, 0) for every image; the language model's depend on the "
                          "text before the image (notebook 11, section 3)",
                          "编码器的 id 对每张图都从 (0, 0) 重新开始；语言模型的 id 取决于图像前面的文本（notebook 11 "
                          "第 3 节）"),
                "c": Text("in M-RoPE a text token has t = h = w: plain 1-D RoPE; the encoder sees no text",
                          "M-RoPE 中文本 token 的 t = h = w：就是普通的一维 RoPE；编码器根本看不到文本"),
                "d": Text("a running index puts the patch below W positions away: both use 2-D coordinates "
                          "(notebook 11, section 1)",
                          "递增下标会让正下方的图像块相距 W 个位置：两者用的都是二维坐标（notebook 11 第 1 节）")},
    },
    "shift_sign": {
        "question": Text("A full cache is shifted as llama.cpp does: n tokens dropped, the later ones moved n places "
                         "earlier. A moved key was cached rotated at its old position p. To make it the key at p - n, "
                         "you ...",
                         "像 llama.cpp 那样平移一个满了的缓存：丢掉 n 个 token，后面的往前挪 n 位。"
                         "被移动的键是在旧位置 p 处旋转后缓存的。要让它成为 p - n 处的键，你应当……"),
        "options": {"a": Text("recompute it from the token's hidden state", "由该 token 的隐藏状态重新计算它"),
                    "b": Text("turn it by R(+n)", "把它转 R(+n)"),
                    "c": Text("leave it as it is: RoPE is relative", "保持不动：RoPE 是相对的"),
                    "d": Text("turn it by R(-n)", "把它转 R(-n)")},
        "answer": "d",
        "why": {"a": Text("not needed: R(a) R(b) = R(a + b), so one more turn gives the key at p - n exactly "
                          "(notebook 13, section 1); in a stack neither undoes that the kept tokens saw the dropped "
                          "ones",
                          "不需要：R(a) R(b) = R(a + b)，再转一次就精确地得到 p - n 处的键（notebook 13 第 1 节）；"
                          "多层时两种做法都去不掉保留的 token 曾看到被丢弃 token 这一点"),
                "b": Text("wrong sign: that puts the key at p + n, 2n positions from where it belongs",
                          "符号反了：那样键会到 p + n，离该在的位置差 2n"),
                "c": Text("the next query is numbered after the kept tokens, n lower than before, so a key left at p "
                          "looks n positions farther away than it is",
                          "下一个查询接在保留的 token 之后编号，比原来小 n，留在 p 的键看起来就比实际远 n 个位置")},
    },
    "tree_positions": {
        "question": Text("Speculative decoding verifies a token tree after a prefix of P tokens: the root r, its "
                         "children x and y, and z, a child of x, listed in the order r, x, y, z. Their position ids "
                         "are ...",
                         "投机解码在 P 个 token 的前缀之后验证一棵 token 树：根 r，它的子节点 x 和 y，"
                         "以及 x 的子节点 z，按 r、x、y、z 的顺序排列。它们的位置 id 是……"),
        "options": {"a": "P, P+1, P+2, P+3", "b": "P, P+1, P+1, P+2", "c": "0, 1, 1, 2", "d": "P+1, P+2, P+2, P+3"},
        "answer": "b",
        "why": {"a": Text("that is the flattened order: y would sit one position after its sibling x, and z two after "
                          "its parent (notebook 13, section 3)",
                          "这是展平后的顺序：y 会比它的兄弟 x 多一个位置，z 比它的父节点多两个（notebook 13 第 3 节）"),
                "c": Text("the tree follows the prefix: add P", "树接在前缀之后：要加上 P"),
                "d": Text("off by one: the root is the first new token, at position P",
                          "差了一：根就是第一个新 token，在位置 P")},
    },
    "double_scaling": {
        "question": Text("DeepSeek-V3's config.json (data/model_configs.json) has YaRN with factor 40 over "
                         "original_max_position_embeddings 4096. A server that takes max_position_embeddings x "
                         "factor as the maximum length claims ... tokens (compute it)",
                         "DeepSeek-V3 的 config.json（data/model_configs.json）用 YaRN，factor 为 40，"
                         "original_max_position_embeddings 为 4096。把 max_position_embeddings x factor 当作最大长度的"
                         "服务端，会声称支持多少个 token？（请算出来）"),
        "options": {"a": "6,553,600", "b": "163,840", "c": "4,096", "d": "1,638,400"},
        "values": {"a": 6_553_600, "b": 163_840, "c": 4_096, "d": 1_638_400},
        "solve": lambda _r: _deepseek_length().times_factor,
        "explain": lambda _r: tr(f"its max_position_embeddings is already 4096 x 40 = {_deepseek_length().usable:,}, "
                                 f"so x 40 again gives {_deepseek_length().times_factor:,}: double scaling "
                                 "(notebook 13, section 6)",
                                 f"它的 max_position_embeddings 已经是 4096 x 40 = {_deepseek_length().usable:,}，"
                                 f"再乘 40 就得到 {_deepseek_length().times_factor:,}："
                                 "双重缩放（notebook 13 第 6 节）"),
    },

    # ------------------------------------------------------------------------------------- notebook 14
    "same_map_generator": {
        "question": Text("The query at position m and the key at position n both get the same map: q -> exp(mM) q, "
                         "k -> exp(nM) k. For every q and k, the score q . k depends on n - m alone exactly when M "
                         "is ...",
                         "位置 m 的查询和位置 n 的键经过同一种映射：q -> exp(mM) q，k -> exp(nM) k。"
                         "要让分数 q . k 对任意 q、k 都只取决于 n - m，M 必须是……"),
        "options": {"a": Text("any real square matrix", "任意实方阵"),
                    "b": Text("a negative multiple of the identity (a decay)", "单位矩阵的负数倍（一种衰减）"),
                    "c": Text("nilpotent (M^2 = 0), as for ALiBi", "幂零的（M^2 = 0），就像 ALiBi 那样"),
                    "d": Text("skew-symmetric (M^T = -M): a rotation, i.e. RoPE",
                              "反对称的（M^T = -M）：旋转，即 RoPE")},
        "answer": "d",
        "why": {"a": Text("the score is q^T exp(mM^T) exp(nM) k; at m = n it must be q^T k, so exp(mM) must be "
                          "orthogonal, which only a skew-symmetric M gives (notebook 14, section 1)",
                          "分数是 q^T exp(mM^T) exp(nM) k；m = n 时它必须等于 q^T k，所以 exp(mM) 必须是正交矩阵，"
                          "只有反对称的 M 做得到（notebook 14 第 1 节）"),
                "b": Text("exp(-am) on the query and exp(-an) on the key give exp(-a(m + n)): a function of m + n. "
                          "A decay is relative only when the query gets the inverse, exp(+am), as in xPos "
                          "(notebook 14, section 1)",
                          "查询乘 exp(-am)、键乘 exp(-an)，得到 exp(-a(m + n))：取决于 m + n。只有查询改乘逆映射 "
                          "exp(+am)（xPos 的做法），衰减才是相对的（notebook 14 第 1 节）"),
                "c": Text("with N^2 = 0, (I + mN)^T (I + nN) = I + mN^T + nN + mn N^T N depends on m and n "
                          "separately; ALiBi's generator acts on the query by the inverse transpose "
                          "(notebook 14, section 1)",
                          "N^2 = 0 时，(I + mN)^T (I + nN) = I + mN^T + nN + mn N^T N 分别依赖 m 和 n；"
                          "ALiBi 的生成元作用在查询上的是逆转置（notebook 14 第 1 节）")},
    },
    "content_cache": {
        "question": Text("Decoding one token at a time with a KV cache, which encoding can keep nothing per cached "
                         "key that later steps reuse, and recomputes its gates over the whole cache with each new "
                         "query?",
                         "用 KV 缓存逐个 token 解码时，哪种编码没法为缓存里的每个键存下后续步骤可复用的量，"
                         "每来一个新查询都要在整个缓存上重算它的门控？"),
        "options": {"a": "Forgetting Transformer (FoX)",
                    "b": "PaTH",
                    "c": "CoPE",
                    "d": "ALiBi"},
        "answer": "c",
        "why": {"a": Text("it keeps each token's log forget gate beside its key; the bias of query i and key j is the "
                          "sum of those after key j up to the query, a running sum (notebook 14, section 2)",
                          "它在每个键旁边存下该 token 的遗忘门对数；查询 i 与键 j 之间的偏置就是键 j 之后直到查询为止"
                          "这些值的和，一个累加和（notebook 14 第 2 节）"),
                "b": Text("it keeps each token's Householder-like map (w, beta) beside its key; the authors' cache "
                          "(fla's PaTHAttention) goes further and applies each new token's map to the cached keys "
                          "once, so later steps read them already transformed (notebook 14, section 2)",
                          "它在每个键旁边存下该 token 的类 Householder 变换 (w, beta)；"
                          "作者实现（fla 的 PaTHAttention）的缓存更进一步："
                          "每个新 token 的映射只对缓存的键作用一次，"
                          "后续步骤读到的就是变换好的键（notebook 14 第 2 节）"),
                "d": Text("its bias is the slope times the distance, computed from the positions alone; nothing "
                          "depends on the query's content (notebook 05)",
                          "它的偏置是斜率乘以距离，只由位置算出，与查询的内容无关（notebook 05）")},
    },
    "frequency_roles": {
        "question": Text("Barbero et al. (arXiv 2410.06205) looked at which RoPE frequencies a trained Gemma 7B "
                         "uses. They found that ...",
                         "Barbero 等人（arXiv 2410.06205）考察了训练好的 Gemma 7B 用到哪些 RoPE 频率。他们发现……"),
        "options": {"a": Text("the highest frequencies build positional heads and the lowest carry content "
                              "(semantic) information, which p-RoPE keeps unrotated",
                              "最高的频率用来构建位置头，最低的频率承载内容（语义）信息，"
                              "p-RoPE 就让这部分不旋转"),
                    "b": Text("the lowest frequencies build positional heads and the highest are unused",
                              "最低的频率用来构建位置头，最高的频率没有被用到"),
                    "c": Text("every frequency is used about equally", "各个频率被用到的程度差不多"),
                    "d": Text("the model ignores RoPE and learns positions from the causal mask alone",
                              "模型不理会 RoPE，只靠因果掩码学出位置")},
        "answer": "a",
        "why": {"b": Text("the other way round: a fast pair turns far in one step, which a sharp positional pattern "
                          "(the token itself, the previous one) needs; a slow pair barely turns within the context "
                          "and so can carry content. (Notebook 14, section 4 measures 07's small model, whose "
                          "previous-token heads lean on a middle pair instead.)",
                          "正好反过来：快速对一步就转过很大的角度，"
                          "锐利的位置模式（token 自己、前一个 token）正需要这个；"
                          "慢速对在上下文里几乎不转，于是可以承载内容。（notebook 14 第 4 节测了 07 的小模型，"
                          "它的前一个 token 头依赖的反而是中间的一对。）"),
                "c": Text("the q and k norms concentrate in some frequency bands and differ between heads; that "
                          "uneven use is the paper's finding (notebook 14, section 4)",
                          "q 和 k 的范数集中在某些频段，而且各个头不一样；这种不均匀正是论文的发现"
                          "（notebook 14 第 4 节）"),
                "d": Text("that is what NoPE decoders do (notebook 01); a RoPE model uses its fast pairs for "
                          "positional heads (notebook 14, section 4)",
                          "那是 NoPE 解码器的做法（notebook 01）；RoPE 模型用它的快速对构建位置头"
                          "（notebook 14 第 4 节）")},
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
        for letter, text in sorted(item["options"].items()):
            print(f"     {letter}) {text}")


def _same_value(given: str, value) -> bool:
    """Does the text a learner gave read as an option's value (a number within 0.005, or the same text)?"""
    try:
        return isinstance(value, (int, float)) and math.isclose(float(given), float(value), abs_tol=5e-3)
    except ValueError:
        return str(value).lower() == given


def _not_a_letter(qid: str, item: dict, given: str) -> str:
    """The line for an answer that is not one of the letters: the letter with a bracket or a dot round it, an
    option's value (a computed question answered with the number), or something else."""
    letters = list(item["options"])
    bare = given.strip("()[]. ")
    if bare in item["options"]:
        return tr(f"[{qid}] write the letter alone: {bare!r}, not {given!r}",
                  f"[{qid}] 只写字母：{bare!r}，不要写成 {given!r}")
    for letter, value in item.get("values", {}).items():
        if _same_value(given, value):
            return tr(f"[{qid}] {given!r} is the value of option {letter}: answer with the letter ({letter!r}), as "
                      "for every question",
                      f"[{qid}] {given!r} 是选项 {letter} 的值：要填字母（{letter!r}），每道题都一样")
    return tr(f"[{qid}] {given!r} is not one of the options {letters}",
              f"[{qid}] {given!r} 不在选项 {letters} 之中")


def check_quiz(answers: dict, results: dict | None = None) -> None:
    """answers: {question id: letter}. Raises ExerciseError explaining every wrong or missing answer."""
    if not isinstance(answers, dict):
        raise ExerciseError(tr(f"answers should be a dict like {{'equivariance': 'c', ...}}, got "
                               f"{type(answers).__name__}",
                               f"answers 应是一个 dict，形如 {{'equivariance': 'c', ...}}，"
                               f"得到的是 {type(answers).__name__}"))
    unknown = sorted(set(answers) - set(QUIZ))
    if unknown:
        raise ExerciseError(tr(f"unknown question ids {unknown}; the ids are {list(QUIZ)}",
                               f"未知的题目 id：{unknown}；可用的 id 是 {list(QUIZ)}"))
    results = load_results("extrapolation") if results is None else results
    right = quiz_answers(results)
    problems = []
    for qid, item in QUIZ.items():
        given = answers.get(qid)
        if given is None:
            problems.append(tr(f"[{qid}] not answered yet", f"[{qid}] 还没作答"))
            continue
        given = str(given).strip().lower()
        if given not in item["options"]:
            problems.append(_not_a_letter(qid, item, given))
        elif given != right[qid]:
            why = item["explain"](results) if "solve" in item else item["why"][given]
            problems.append(tr(f"[{qid}] not {given}: {why}", f"[{qid}] 不是 {given}：{why}"))
    if problems:
        raise ExerciseError(tr(f"{len(QUIZ) - len(problems)}/{len(QUIZ)} right.\n  ",
                               f"答对 {len(QUIZ) - len(problems)}/{len(QUIZ)} 题。\n  ") + "\n  ".join(problems))
    ok(tr(f"all {len(QUIZ)} answers right", f"{len(QUIZ)} 道题全部答对"))


# ------------------------------------------------------------------------------------ reference solutions

SOLUTIONS: dict = {  # exercise name -> a reference solution (kept out of the notebooks' visible cells)
    "quiz": quiz_answers,
}

CHECKS: dict = {name: globals()[f"check_{name}"] for name in SOLUTIONS}  # exercise name -> its checker


# ------------------------------------------------------------------ the interview sheet's numbers (notebook 09)
def _share(part: int, whole: int, *, pairs: bool = False) -> str:
    """'5 of 8' (in Chinese with the measure word for what is counted: pairs, or models)."""
    if pairs:
        return tr(f"{part} of {whole}", f"{whole} 对中的 {part} 对")
    return tr(f"{part} of {whole}", f"{whole} 个中的 {part} 个")


def sheet_numbers(results: dict | None = None) -> dict:
    """Every number the interview sheet at the top of notebook 09 states, computed here as the course computes
    it (name -> the text the sheet shows): tests/test_interview_sheet.py holds both editions' sheets to
    these, and the cell after the sheet prints them, so the sheet cannot drift from the library or data/."""
    from ..configs import from_hf_config
    from ..experiments import load_model_configs
    from ..inference import position_ids_from_mask
    from ..rope import apply_rope

    summary = (load_results("extrapolation") if results is None else results)["summary"]

    def rise(encoding, multiple):                      # loss at multiple * L minus loss at L, mean over seeds
        return f"{summary[encoding][multiple]['mean'] - summary[encoding]['1']['mean']:+.2f}"

    d = 16                                             # 09 section 2: q, k from seed 1, interleaved pairs
    q, k = torch.randn(2, d, generator=torch.Generator().manual_seed(1), dtype=torch.float64)

    def score(m, n):
        turn = lambda x, p: apply_rope(x[None], torch.tensor([p]), layout="interleaved")[0]  # noqa: E731
        return f"{float(turn(q, m) @ turn(k, n)):.4f}"

    key = torch.randn(d, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    back = 500                                         # a query that is the key turned back by 500 positions
    query = apply_rope(key[None], torch.tensor([-back]), layout="interleaved")[0]
    distance = torch.arange(2 * back + 1)
    peak = int((apply_rope(query.expand(distance.numel(), d), distance, layout="interleaved") @ key).argmax())
    configs = {m["name"]: from_hf_config(m["config"]) for m in load_model_configs()}
    l0 = {"original_max_position_embeddings": 4096}     # a Llama 2-sized head (d 128, L0 4096) at factor 4
    scaled = {t: rope_inv_freq(128, scaling={"rope_type": t, "factor": 4.0, **({} if t == "linear" else l0)},
                               seq_len=4 * 4096) for t in ("linear", "dynamic", "yarn")}
    plain = rope_inv_freq(128)[0]
    return {
        "longest_wavelength_d512": f"{2 * math.pi * 10000 ** (1 - 2 / 512):,.0f}",
        "llama31_base": f"{configs['Llama 3.1 8B'].layer(0).base:,.0f}",
        "score_5_2": score(5, 2), "score_2_5": score(2, 5),
        "rise_rope_8L": rise("rope", "8"), "rise_nope_8L": rise("nope", "8"), "rise_t5_8L": rise("t5", "8"),
        "rise_alibi_8L": rise("alibi", "8"), "rise_sinusoidal_2L": rise("sinusoidal", "2"),
        "decay_peak": f"{peak}",
        "rope_configs": _share(sum(bool(p.rope_layers) for p in configs.values()), len(configs)),
        "slow_pairs": _share(int((_turns_in_l0() < 1).sum()), _DIM // 2, pairs=True),
        "pi_last": f"{float(scaled['linear'][0][-1] / plain[-1]):.2f}",
        "dynamic_slowdown": f"{float(plain[-1] / scaled['dynamic'][0][-1]):.0f}",
        "yarn_attention": f"{float(scaled['yarn'][1]):.3f}",
        "left_pad": f"{position_ids_from_mask(torch.tensor([[0, 0, 1, 1, 1]]))[0].tolist()}",
    }
