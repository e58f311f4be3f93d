"""Exercises of notebook 10: RoPE as production checkpoints use it. How many pairs of a base make less than one
turn in a context, partial rotary (GPT-NeoX, Phi), the base of each layer of a Gemma 3 config (local and
global), which layers of a Llama 4 / SmolLM3 config are NoPE, and what YaRN's attention factor does to q.k.

Each check_<name>(answer) calls the learner's function on a few inputs, prints one line starting
with "✓" when it is right, and otherwise raises ExerciseError saying WHAT is wrong (all dims rotated, the
frequencies of the whole head, the global base on a local layer, no_rope_layers read backwards, the factor
not squared ...). `attempt(check, answer)` runs a check from a notebook cell without stopping the notebook.
SOLUTIONS[name] is a reference solution for check_<name>; CHECKS[name] is the checker. The right answers
come from posenc_lib itself (rope_inv_freq, apply_rope, from_hf_config), which the tests compare with
transformers.

Conventions (as in posenc_lib.rope): theta_i = base ** (-2i/rot) over the rot rotated dims, wavelength
2 pi / theta_i; "half" layout pairs (i, i + rot/2) within the rotated dims, turned counter-clockwise.
"""
from __future__ import annotations

import copy
import math

import torch

from ..configs import from_hf_config
from ..experiments.results import load_model_configs
from ..i18n import tr
from ..rope import apply_decoupled_rope, apply_rope
from ..scaling import rope_inv_freq, rotary_dim
from ._common import (
    ExerciseError,
    as_tensor,
    attempt,
    call,
    float32_note,
    ignored,
    keep_dtype,
    name_the_mistake,
    number,
    ok,
    same,
)

__all__ = ["attempt", "check_slow_pairs", "check_partial_rope", "check_layer_base", "check_nope_layers",
           "check_yarn_score_scale"]


# ------------------------------------------------------------------------------- the base against the context
_SLOW_CASES = ((10000.0, 128, 4096), (500000.0, 128, 8192), (1000000.0, 128, 131072), (10000.0, 64, 2048))


def _count_slow(base, head_dim, context, *, exponent=2.0, turn=2 * math.pi, slower=True):
    """Pairs i < head_dim/2 whose wavelength turn * base ** (exponent * i / head_dim) exceeds (or, slower=False,
    does not exceed) the context: the right count with the defaults, a typical mistake otherwise."""
    i = torch.arange(head_dim // 2, dtype=torch.float64)
    waves = turn * base ** (exponent * i / head_dim)
    return int((waves > context).sum()) if slower else int((waves <= context).sum())


def check_slow_pairs(fn) -> None:
    """fn(base, head_dim, context) -> how many of the head_dim/2 RoPE pairs make less than one full turn in
    `context` tokens: wavelength 2 pi / theta_i > context, theta_i = base ** (-2i/head_dim)."""
    answers = []
    for base, head_dim, context in _SLOW_CASES:
        got = number(call(fn, base, head_dim, context, what=tr(f"your function({base:g}, {head_dim}, {context})",
                                                               f"你的函数({base:g}, {head_dim}, {context})")),
                     tr("your count", "你返回的个数"))
        answers.append(got)
    right = [float(_count_slow(*case)) for case in _SLOW_CASES]
    if answers == right:
        ok(tr(f"pairs with less than one turn: {[int(a) for a in answers]} (Llama 2, Llama 3 at 8k, Qwen2.5 at 128k, "
              "a 64-dim head at 2k).",
              f"转不满一圈的频率对个数：{[int(a) for a in answers]}（依次是 Llama 2、8k 上下文的 Llama 3、"
              "128k 上下文的 Qwen2.5、2k 上下文下 64 维的注意力头）。"))
        return

    def matches(**kw):
        return answers == [float(_count_slow(*case, **kw)) for case in _SLOW_CASES]

    if matches(slower=False):
        raise ExerciseError(tr("you counted the pairs that DO complete a turn (wavelength <= context); the question "
                               "is the slow ones, wavelength > context",
                               "你数的是能转满一圈的对（波长 <= 上下文长度）；题目问的是慢的那些，即波长 > 上下文长度"))
    if matches(exponent=1.0):
        raise ExerciseError(tr("frequency exponent: theta_i = base ** (-2i / head_dim) for pair i = 0 .. head_dim/2 - "
                               "1; you used i / head_dim, which spans only the square root of the base",
                               "频率的指数不对：第 i 对（i = 0 .. head_dim/2 - 1）"
                               "的 theta_i = base ** (-2i / head_dim)；你用的是 i / head_dim，只覆盖到底数的平方根"))
    if matches(turn=1.0):
        raise ExerciseError(tr("a full turn is 2 pi radians: the wavelength is 2 pi / theta_i tokens, not 1 / theta_i",
                               "转一整圈是 2 pi 弧度：波长是 2 pi / theta_i 个 token，不是 1 / theta_i"))
    if answers == [float(_count_slow(10000.0, head_dim, context)) for _, head_dim, context in _SLOW_CASES]:
        raise ExerciseError(ignored("base", [case[0] for case in _SLOW_CASES], 10000))
    if answers == [2 * w for w in right]:
        raise ExerciseError(tr("you counted dims, not pairs: each pair is two dims that turn together",
                               "你数的是维度，不是对：一对是一起旋转的两个维度"))
    if matches(turn=360.0):
        raise ExerciseError(tr("a full turn is 2 pi radians, not 360: theta_i is in radians per token, so the "
                               "wavelength is 2 pi / theta_i tokens",
                               "转一整圈是 2 pi 弧度，不是 360：theta_i 的单位是“弧度每 token”，所以波长是 "
                               "2 pi / theta_i 个 token"))
    if all(math.isclose(a, w / (case[1] // 2)) for a, w, case in zip(answers, right, _SLOW_CASES)):
        raise ExerciseError(tr("that is the fraction of the pairs; the question asks how many: a count of pairs, "
                               "out of head_dim/2",
                               "这是慢的对所占的比例；题目问的是有多少对：在 head_dim/2 对中数出来的个数"))
    raise ExerciseError(tr(f"for (base, head_dim, context) = {list(_SLOW_CASES)} expected {[int(w) for w in right]}, "
                           f"got {answers}",
                           f"(base, head_dim, context) = {list(_SLOW_CASES)} 时应为 {[int(w) for w in right]}，"
                           f"得到的是 {answers}"))


# ------------------------------------------------------------------------------- partial rotary
def _wrong_pairs_across_the_head(x, positions, fraction, base):
    """Pairs (i, i + d/2) of the WHOLE head for i < rot/2 (rotate_half over the head, then keep rot/2 pairs)."""
    d, rot = x.shape[-1], rotary_dim(x.shape[-1], fraction)
    index = torch.cat((torch.arange(rot // 2), d // 2 + torch.arange(rot // 2)))
    out = x.clone()
    out[..., index] = apply_rope(x[..., index], positions, base=base)
    return out


def _partial_rope_low_precision(x, positions, fraction, base):
    """(dtype name, significant bits, partial RoPE with the angles in that dtype) for bf16 and fp16, each way a
    learner gets there: the float64 angles rounded, or positions and theta rounded and multiplied in it; cos and
    sin taken in float64 or in the low dtype."""
    rot = rotary_dim(x.shape[-1], fraction)
    theta = base ** (-torch.arange(0, rot, 2, dtype=torch.float64) / rot)
    head = x[..., :rot]
    turned_head = torch.cat((-head[..., rot // 2:], head[..., :rot // 2]), -1)
    for dtype, name, bits in ((torch.bfloat16, "bf16", 8), (torch.float16, "fp16", 11)):
        for angles in ((positions.double()[:, None] * theta).to(dtype), positions[:, None].to(dtype) * theta.to(dtype)):
            for cos, sin in ((angles.double().cos(), angles.double().sin()),
                             (angles.cos().double(), angles.sin().double())):
                cos, sin = torch.cat((cos,) * 2, -1), torch.cat((sin,) * 2, -1)
                yield name, bits, torch.cat((head * cos + turned_head * sin, x[..., rot:]), -1)


def check_partial_rope(fn) -> None:
    """fn(x (T, d), positions (T,) int64, partial_rotary_factor, base) -> x with RoPE on its first
    rot = int(d * partial_rotary_factor) dims only (half layout within them: pairs (i, i + rot/2), theta_i =
    base ** (-2i/rot)), dims rot .. d-1 unchanged; as Hugging Face's GPT-NeoX and Phi. The result is in x's dtype
    (float64 here); float32 angles pass with a note on what they cost at long positions."""
    gen = torch.Generator().manual_seed(10)
    positions = torch.tensor([0, 1, 2, 5, 17, 100])
    gap = 0.0  # the largest difference of a right answer from the float64 reference: float32 angles get a note
    for d, fraction, base in ((24, 0.5, 100.0), (20, 0.4, 10000.0)):
        x = torch.randn(6, d, generator=gen, dtype=torch.float64)
        before = x.clone()
        got = as_tensor(call(fn, x, positions, fraction, base, what=tr("your partial RoPE", "你的部分 RoPE 函数")),
                        tr("your partial RoPE", "你的部分 RoPE 函数"))
        if not torch.equal(x, before):
            raise ExerciseError(tr("your function changed x in place: return a new tensor",
                                   "你的函数原地改动了 x：请返回一个新张量"))
        want = apply_rope(x, positions, base=base, partial_rotary_factor=fraction)
        if tuple(got.shape) != tuple(want.shape):
            raise ExerciseError(tr(f"expected the shape of x {tuple(x.shape)}, got {tuple(got.shape)}: the unrotated "
                                   "dims stay in the output",
                                   f"输出的形状应与 x 相同，即 {tuple(x.shape)}，得到的是 {tuple(got.shape)}："
                                   f"不旋转的维度也要留在输出里"))
        if _close_by_position(got, want, positions):  # float32 angles too (error growing with the position)
            keep_dtype(got, x, tr("your partial RoPE", "你的部分 RoPE 函数"))
            gap = max(gap, float((got.double() - want).abs().max()))
            continue
        rot = rotary_dim(d, fraction)
        theta_head = rope_inv_freq(d, base=base)[0][: rot // 2]
        known_mistakes = (  # (what that mistake returns, what to tell the learner)
            (apply_rope(x, positions, base=base),
             tr(f"you rotated all {d} dims: a partial-rotary model (GPT-NeoX rotary_pct, Phi partial_rotary_factor) "
                f"turns only the first rot = int(d * factor) = {rot}; the other {d - rot} carry no position and must "
                "pass through unchanged",
                f"你把全部 {d} 维都转了：部分旋转的模型（GPT-NeoX 的 rotary_pct、Phi 的 partial_rotary_factor）"
                f"只转前 rot = int(d * factor) = {rot} 维；其余 {d - rot} 维不带位置信息，必须原样输出")),
            (apply_decoupled_rope(x, positions, rope_dim=rot, base=base, layout="half"),
             tr("you rotated the LAST rot dims (DeepSeek's decoupled layout); GPT-NeoX and Phi rotate the FIRST rot = "
                "int(d * factor) dims and copy the rest",
                "你转的是最后 rot 维（DeepSeek 的解耦布局）；GPT-NeoX 和 Phi 转的是前 rot = int(d * factor) 维，"
                "其余照抄")),
            (apply_rope(x, positions, inv_freq=theta_head, partial_rotary_factor=fraction),
             tr("your frequencies are the whole head's, base ** (-2i/d); the exponent runs over the rotated dims, "
                "theta_i = base ** (-2i/rot), as in transformers (rope_inv_freq of rot)",
                "你的频率是按整个头算的 base ** (-2i/d)；指数只在旋转的维度上取，theta_i = base ** (-2i/rot)，"
                "与 transformers 一致（即对 rot 调用 rope_inv_freq）")),
            (_wrong_pairs_across_the_head(x, positions, fraction, base),
             tr("you paired dim i with dim i + d/2 of the whole head; the pairs live inside the rotated dims: (i, i + "
                "rot/2) for i < rot/2 (rotate_half on x[..., :rot])",
                "你把第 i 维和整个头的第 i + d/2 维配成了一对；配对应在旋转的维度内部进行："
                "(i, i + rot/2)，i < rot/2（对 x[..., :rot] 做 rotate_half）")),
            (apply_rope(x, torch.arange(len(positions)), base=base, partial_rotary_factor=fraction),
             ignored("positions", positions.tolist(), "torch.arange(T)")),
            (apply_rope(x, positions, partial_rotary_factor=fraction) if base != 10000.0 else want,
             ignored("base", f"{base:g}", 10000)),
            (apply_rope(x, positions, base=base, layout="interleaved", partial_rotary_factor=fraction),
             tr("you paired neighbours (2i, 2i+1), GPT-J's interleaved layout; GPT-NeoX and Phi in transformers pair "
                "(i, i + rot/2) within the rotated dims",
                "你把相邻维度 (2i, 2i+1) 配成了对，这是 GPT-J 的交错（interleaved）布局；transformers 里的 GPT-NeoX "
                "和 Phi 在旋转的维度内按 (i, i + rot/2) 配对")),
            *((rounded,
               tr(f"your angles were rounded to {name} ({bits} significant bits): position * theta is off by "
                  f"fractions of a radian at positions like 100, so every pair turns by a wrong angle. The task asks "
                  f"for angles in float64; round only the result",
                  f"你的角度被舍入成了 {name}（只有 {bits} 位有效二进制位）：在 100 这样的位置上，position * theta "
                  f"会偏零点几弧度，每一对都转错了角度。题目要求角度用 float64；只在最后对结果做舍入"))
              for name, bits, rounded in _partial_rope_low_precision(x, positions, fraction, base)),
        )
        name_the_mistake(got, known_mistakes, lambda a, b: same(a, b, atol=1e-5))
        if not torch.equal(got[..., rot:].to(x.dtype), x[..., rot:]):
            raise ExerciseError(tr(f"dims {rot} .. {d - 1} must be copied unchanged (bit for bit); yours differ",
                                   f"第 {rot} .. {d - 1} 维必须原样照抄（逐位相同）；你的结果不一样"))
        if not same(got[0], x[0], atol=1e-5):
            raise ExerciseError(tr("position 0 must not move (angle 0); yours changes it",
                                   "位置 0 不应改变（角度为 0）；你的结果把它改了"))
        raise ExerciseError(tr("wrong values in the rotated dims: max |difference| "
                               f"{float((got.double() - want).abs().max()):.3g}",
                               f"旋转维度上的值不对：最大 |差值| 为 "
                               f"{float((got.double() - want).abs().max()):.3g}"))
    ok(tr("RoPE on the first int(d * factor) dims, pairs (i, i + rot/2), theta over rot, the rest copied: partial "
          "rotary as GPT-NeoX and Phi do it.",
          "只对前 int(d * factor) 维做 RoPE，按 (i, i + rot/2) 配对，theta 在 rot 维上计算，其余照抄："
          "这正是 GPT-NeoX 和 Phi 的部分旋转。") + float32_note(gap, int(positions.max())))


def _close_by_position(got: torch.Tensor, want: torch.Tensor, positions: torch.Tensor) -> bool:
    """Equal within 1e-5 + 1e-6 * position, row by row: float32 angles (whose error grows with the position) pass,
    bf16/fp16 ones do not."""
    tolerance = 1e-5 + 1e-6 * positions.double().abs()[:, None]
    return got.shape == want.shape and bool(((got.double() - want.double()).abs() <= tolerance).all())


# ------------------------------------------------------------------------------- Gemma 3: local and global bases
def _gemma3_configs() -> list:
    """The Gemma 3 entry of data/model_configs.json (its text_config, flat) and a smaller variant with another
    pattern and other bases, so that nothing hard-coded passes."""
    entry = next(m for m in load_model_configs() if m["name"].startswith("Gemma 3"))
    real = dict(entry["config"]["text_config"])
    variant = {**real, "num_hidden_layers": 10, "sliding_window_pattern": 4, "rope_theta": 500000.0,
               "rope_local_base_freq": 20000.0}
    return [real, variant]


def check_layer_base(fn) -> None:
    """fn(config, layer) -> the RoPE base of layer `layer` of a Gemma 3 text config (a dict with rope_theta,
    rope_local_base_freq, sliding_window_pattern, num_hidden_layers): every sliding_window_pattern-th layer
    (layers p-1, 2p-1, ...) is global and uses rope_theta; the others are local (sliding window) and use
    rope_local_base_freq. Checked against from_hf_config, which reads the config as transformers does."""
    for config in _gemma3_configs():
        layers = from_hf_config(config).layers
        pattern, n = config["sliding_window_pattern"], config["num_hidden_layers"]
        glob, local = config["rope_theta"], config["rope_local_base_freq"]
        got = []
        for i in range(n):
            given = copy.deepcopy(config)
            got.append(number(call(fn, given, i, what=tr(f"your function(config, {i})", f"你的函数(config, {i})")),
                              tr("your base", "你返回的底数")))
            if given != config:
                raise ExerciseError(tr("your function changed the config dict; read it, do not modify it",
                                       "你的函数改动了 config 字典：只能读，不要改"))
        want = [layer.base for layer in layers]
        if got == want:
            continue
        is_global = [(i + 1) % pattern == 0 for i in range(n)]
        if got == [glob] * n:
            raise ExerciseError(tr(f"every layer got rope_theta = {glob:g}: that is the GLOBAL layers' base; the "
                                   f"local (sliding-window) layers use rope_local_base_freq = {local:g}",
                                   f"每一层都用了 rope_theta = {glob:g}：这是全局层的底数；局部（滑动窗口）层"
                                   f"用的是 rope_local_base_freq = {local:g}"))
        if got == [local] * n:
            raise ExerciseError(tr(f"every layer got rope_local_base_freq = {local:g}; every {pattern}th layer is "
                                   f"global and uses rope_theta = {glob:g}",
                                   f"每一层都用了 rope_local_base_freq = {local:g}；"
                                   f"每 {pattern} 层中的最后一层是全局层，用的是 rope_theta = {glob:g}"))
        if got == [local if g else glob for g in is_global]:
            raise ExerciseError(tr("local and global swapped: rope_theta belongs to the global layers (every "
                                   "sliding_window_pattern-th), rope_local_base_freq to the sliding-window ones",
                                   "局部层和全局层弄反了：rope_theta 属于全局层（每 sliding_window_pattern 层中的"
                                   "最后一层），rope_local_base_freq 属于滑动窗口层"))
        if got == [glob if i % pattern == 0 else local for i in range(n)]:
            raise ExerciseError(tr(f"off by one: the global layers are {pattern - 1}, {2 * pattern - 1}, ... ((i + 1) "
                                   f"% sliding_window_pattern == 0), not 0, {pattern}, ... (i % pattern == 0)",
                                   f"差了一位：全局层是第 {pattern - 1}、{2 * pattern - 1}……层"
                                   f"（(i + 1) % sliding_window_pattern == 0），不是第 0、{pattern}……层"
                                   f"（i % pattern == 0）"))
        factor = (config.get("rope_scaling") or {}).get("factor")
        if factor and got == [glob * factor if g else local for g in is_global]:
            raise ExerciseError(tr(f"the global layers got rope_theta * factor = {glob * factor:g}: rope_scaling "
                                   f"(linear, factor {factor:g}) divides the global layers' frequencies by the factor "
                                   f"(position interpolation), it does not raise their base, which stays rope_theta = "
                                   f"{glob:g} (raising the base is another method, NTK-aware or ABF)",
                                   f"全局层拿到的是 rope_theta * factor = {glob * factor:g}：rope_scaling（linear，"
                                   f"factor {factor:g}）是把全局层的频率除以这个因子（位置插值），并不抬高底数，"
                                   f"底数仍是 rope_theta = {glob:g}（抬高底数是另一种方法：NTK-aware 或 ABF）"))
        window = config.get("sliding_window")
        if window is not None and got == [glob if g else window for g in is_global]:
            raise ExerciseError(tr(f"the local layers got {window}: that is sliding_window, how many tokens back a "
                                   "local layer attends, not its RoPE base; the base is rope_local_base_freq = "
                                   f"{local:g}",
                                   f"局部层拿到的是 {window}：这是 sliding_window，即局部层往回看多少个 token，"
                                   f"不是它的 RoPE 底数；底数是 rope_local_base_freq = {local:g}"))
        if pattern != 6 and got == [glob if (i + 1) % 6 == 0 else local for i in range(n)]:
            raise ExerciseError(tr("right for Gemma 3's own pattern of 6, wrong for a config with "
                                   f"sliding_window_pattern = {pattern}: read the pattern from the config",
                                   f"这只对 Gemma 3 自己的间隔 6 成立，换成 sliding_window_pattern = {pattern} "
                                   f"的配置就错了：间隔要从 config 里读"))
        wrong = [i for i in range(n) if got[i] != want[i]]
        raise ExerciseError(tr(f"layers {wrong[:6]} get the wrong base (e.g. layer {wrong[0]}: {got[wrong[0]]:g}, "
                               f"expected {want[wrong[0]]:g})",
                               f"这些层的底数不对：{wrong[:6]}（例如第 {wrong[0]} 层：得到 {got[wrong[0]]:g}，"
                               f"应为 {want[wrong[0]]:g}）"))
    ok(tr("local layers rope_local_base_freq, every sliding_window_pattern-th layer rope_theta: Gemma 3's bases, "
          "layer by layer.",
          "局部层用 rope_local_base_freq，每 sliding_window_pattern 层中的最后一层用 rope_theta："
          "这就是 Gemma 3 逐层的底数。"))


# ------------------------------------------------------------------------------- NoPE layers
def _nope_configs() -> list:
    """Llama 4 Scout's text_config (an explicit no_rope_layers list), SmolLM3's (the default interval), a
    llama4_text config with interval 3 and no list, and a smollm3 config with an irregular list."""
    models = load_model_configs()
    scout = dict(next(m for m in models if m["name"].startswith("Llama 4"))["config"]["text_config"])
    smol = dict(next(m for m in models if m["name"].startswith("SmolLM3"))["config"])
    small = {"model_type": "llama4_text", "num_hidden_layers": 12, "num_attention_heads": 4, "hidden_size": 64,
             "head_dim": 16, "no_rope_layer_interval": 3}
    irregular = {"model_type": "smollm3", "num_hidden_layers": 8, "num_attention_heads": 4, "hidden_size": 64,
                 "no_rope_layers": [1, 1, 0, 1, 0, 1, 1, 1]}
    return [scout, smol, small, irregular]


def check_nope_layers(fn) -> None:
    """fn(config) -> the sorted indices of the NoPE layers (no rotation of q and k) of a Llama 4 or SmolLM3 config:
    no_rope_layers, when given, has one flag per layer, 1 = this layer USES RoPE (transformers' naming), 0 =
    NoPE; without it, every no_rope_layer_interval-th layer (layers k-1, 2k-1, ...; default 4) is NoPE."""
    for config in _nope_configs():
        given = copy.deepcopy(config)
        result = call(fn, given, what=tr("your function(config)", "你的函数(config)"))
        if given != config:
            raise ExerciseError(tr("your function changed the config dict; read it, do not modify it",
                                   "你的函数改动了 config 字典：只能读，不要改"))
        what = tr("your function(config)", "你的函数(config)")
        values = as_tensor(sorted(result) if isinstance(result, (set, frozenset)) else result, what)  # NaN named
        if values.dim() != 1 or values.is_complex() or values.dtype == torch.bool:
            raise ExerciseError(tr(f"return a list of layer indices, got {type(result).__name__} ({result!r:.60})",
                                   f"应返回层索引的列表，得到的是 {type(result).__name__}（{result!r:.60}）"))
        got = sorted(int(i) for i in values.tolist())
        want = from_hf_config(config).nope_layers
        if got == want:
            continue
        n = config["num_hidden_layers"]
        flags = config.get("no_rope_layers")
        interval = config.get("no_rope_layer_interval", 4)
        if flags and got == [i for i in range(n) if flags[i]]:
            raise ExerciseError(tr("no_rope_layers read backwards: despite its name, a 1 at index i means layer i "
                                   "USES RoPE (transformers: use_rope = no_rope_layers[i]); the NoPE layers are the 0s",
                                   "no_rope_layers 读反了：别看名字，索引 i 处为 1 表示第 i 层使用 RoPE"
                                   "（transformers：use_rope = no_rope_layers[i]）；NoPE 层是那些 0"))
        if got == list(range(0, n, interval)):
            raise ExerciseError(tr(f"off by one: with an interval of {interval} the NoPE layers are {interval - 1}, "
                                   f"{2 * interval - 1}, ... ((i + 1) % interval == 0), not 0, {interval}, ...",
                                   f"差了一位：间隔为 {interval} 时，NoPE 层是第 {interval - 1}、"
                                   f"{2 * interval - 1}……层（(i + 1) % interval == 0），不是第 0、{interval}……层"))
        if flags and got == [i for i in range(n) if (i + 1) % interval == 0]:
            raise ExerciseError(tr("this config lists its layers in no_rope_layers: when the list is given, it "
                                   "decides (the interval is only the default)",
                                   "这份 config 在 no_rope_layers 里逐层列了出来：有这个列表就以它为准"
                                   "（间隔只是默认规则）"))
        if not flags and got == [i for i in range(n) if (i + 1) % interval]:
            raise ExerciseError(tr(f"those are the layers that USE RoPE; the NoPE layers are the others, one in "
                                   f"every {interval}: (i + 1) % interval == 0",
                                   f"这些是使用 RoPE 的层；NoPE 层是其余的那些，即每 {interval} 层中的最后一层："
                                   "(i + 1) % interval == 0"))
        if got == [i + 1 for i in want]:
            raise ExerciseError(tr(f"layer numbers from 1: you returned {got[:4]}..., the layers are indexed from 0 "
                                   f"(model.layers[i]), so {want[:4]}...",
                                   f"你把层从 1 开始编号了，返回的是 {got[:4]}……；"
                                   f"层的下标从 0 开始（model.layers[i]），应为 {want[:4]}……"))
        if interval != 4 and got == [i for i in range(n) if (i + 1) % 4 == 0]:
            raise ExerciseError(tr(f"right for an interval of 4, wrong for no_rope_layer_interval = {interval}: read "
                                   "it from the config (4 is only the default)",
                                   f"间隔为 4 时没错，但 no_rope_layer_interval = {interval} 时就错了：要从 config "
                                   f"里读（4 只是默认值）"))
        raise ExerciseError(tr(f"for a {config['model_type']} config of {n} layers expected NoPE layers {want}, got "
                               f"{got}",
                               f"{n} 层的 {config['model_type']} 配置，NoPE 层应为 {want}，得到的是 {got}"))
    ok(tr("NoPE layers: the 0s of no_rope_layers (1 = uses RoPE), else every interval-th layer: Llama 4 and SmolLM3.",
          "NoPE 层：no_rope_layers 中为 0 的那些层（1 = 使用 RoPE），没有这个列表时取每 interval 层中的最后一层："
          "Llama 4 和 SmolLM3 都是这样。"))


# ------------------------------------------------------------------------------- YaRN's factor on q.k
_FACTORS = (1.0, 2.0, 8.0, 40.0)


def check_yarn_score_scale(fn) -> None:
    """fn(factor) -> the number YaRN multiplies every score q.k by when it stretches a model by `factor` >= 1
    (default mscale): its attention factor 0.1 ln(factor) + 1 (1 for factor 1) multiplies cos and sin, and
    so both the rotated q and the rotated k."""
    got = [number(call(fn, s, what=tr(f"your function({s:g})", f"你的函数({s:g})")), tr("your factor", "你返回的系数"))
           for s in _FACTORS]
    right = []
    for s in _FACTORS:
        scaling = {"rope_type": "yarn", "factor": s, "original_max_position_embeddings": 4096}
        right.append(rope_inv_freq(64, scaling=scaling)[1] ** 2)
    if all(math.isclose(g, r, rel_tol=1e-6) for g, r in zip(got, right)):  # float32 answers pass
        ok(tr("q.k x (0.1 ln s + 1)^2: the attention factor is on cos and sin, so the score gets it twice "
              f"(x{got[-1]:.3f} at s = {_FACTORS[-1]:g}, DeepSeek-V3's factor).",
              "q.k 乘以 (0.1 ln s + 1)^2：注意力因子（attention factor）乘在 cos 和 sin 上，所以分数乘了它两次"
              f"（取 DeepSeek-V3 的因子 s = {_FACTORS[-1]:g} 时，分数乘以 {got[-1]:.3f}）。"))
        return

    def close(values):
        return all(math.isclose(g, v, rel_tol=1e-6) for g, v in zip(got, values))

    if close([math.sqrt(r) for r in right]):
        raise ExerciseError(tr("that is the attention factor itself, 0.1 ln s + 1; it multiplies cos and sin, so the "
                               "rotated q AND the rotated k carry it: q.k is multiplied by its square",
                               "这是注意力因子（attention factor）本身，0.1 ln s + 1；它乘在 cos 和 sin 上，"
                               "旋转后的 q 和 k 各带一份：q.k 乘的是它的平方"))
    if close([r ** 2 for r in right]):
        raise ExerciseError(tr("you counted the factor twice, (0.1 ln s + 1)^4: once on cos and sin (q.k gets its "
                               "square) and again on the score. It goes in one place: DeepSeek-V3 moves the square "
                               "into the softmax scale and sets the factor on cos and sin to 1, so applying both would "
                               "count it twice. Here: the square, (0.1 ln s + 1)^2",
                               "你把这个因子算了两次，成了 (0.1 ln s + 1)^4：一次乘在 cos 和 sin 上（q.k 因此乘了"
                               "它的平方），又在分数上乘了一次。它只该出现在一处："
                               "DeepSeek-V3 把平方挪进 softmax 的缩放，同时把 cos 和 sin 上的因子设为 1，"
                               "两样都做就算了两次。这里的答案是平方 (0.1 ln s + 1)^2"))
    for log, name in ((math.log10, "log10"), (math.log2, "log2")):
        if close([(0.1 * log(s) + 1) ** 2 for s in _FACTORS]):
            raise ExerciseError(tr(f"ln is the natural logarithm (math.log), not {name}",
                                   f"ln 是自然对数（math.log），不是 {name}"))
    if close([1 / math.sqrt(r) for r in right]):
        raise ExerciseError(tr("that is 1 / (0.1 ln s + 1), the YaRN paper's sqrt(t): the paper divides the logits by "
                               "t, sqrt(1/t) = 0.1 ln s + 1, so q.k is multiplied by 1/t = (0.1 ln s + 1)^2",
                               "这是 1 / (0.1 ln s + 1)，即 YaRN 论文里的 sqrt(t)：论文把 logits 除以 t，"
                               "sqrt(1/t) = 0.1 ln s + 1，所以 q.k 乘的是 1/t = (0.1 ln s + 1)^2"))
    if close([1 / r for r in right]):
        raise ExerciseError(tr("inverted: the factor is >= 1 and sharpens the softmax (a larger q.k), it does not "
                               "divide",
                               "倒过来了：这个系数 >= 1，是让 softmax 更尖锐（q.k 更大），不是拿来除的"))
    if close([(math.log(s) + 1) ** 2 for s in _FACTORS]):
        raise ExerciseError(tr("the coefficient of ln s is 0.1: (0.1 ln s + 1)^2",
                               "ln s 前的系数是 0.1：(0.1 ln s + 1)^2"))
    raise ExerciseError(tr(f"for factors {list(_FACTORS)} expected {[round(r, 6) for r in right]}, got {got}",
                           f"因子为 {list(_FACTORS)} 时应为 {[round(r, 6) for r in right]}，得到的是 {got}"))


# ------------------------------------------------------------------------------- reference solutions
def _solution_slow_pairs(base, head_dim, context):
    i = torch.arange(head_dim // 2, dtype=torch.float64)
    wavelength = 2 * math.pi * base ** (2 * i / head_dim)  # 2 pi / theta_i
    return int((wavelength > context).sum())


def _solution_partial_rope(x, positions, partial_rotary_factor, base=10000.0):
    n_rot = int(x.shape[-1] * partial_rotary_factor)                        # the rotated dims
    theta = base ** (-torch.arange(0, n_rot, 2, dtype=torch.float64) / n_rot)  # over the rotated dims
    angles = positions.double()[:, None] * theta                            # (T, n_rot/2)
    cos, sin = torch.cat((angles.cos(), angles.cos()), -1), torch.cat((angles.sin(), angles.sin()), -1)
    part = x[..., :n_rot].double()
    turned = part * cos + torch.cat((-part[..., n_rot // 2:], part[..., : n_rot // 2]), -1) * sin
    return torch.cat((turned.to(x.dtype), x[..., n_rot:]), dim=-1)


def _solution_layer_base(config, layer):
    is_global = (layer + 1) % config["sliding_window_pattern"] == 0
    return config["rope_theta"] if is_global else config["rope_local_base_freq"]


def _solution_nope_layers(config):
    n = config["num_hidden_layers"]
    flags = config.get("no_rope_layers")
    if not flags:  # default: every interval-th layer is NoPE
        interval = config.get("no_rope_layer_interval", 4)
        flags = [int((i + 1) % interval != 0) for i in range(n)]
    return [i for i in range(n) if flags[i] == 0]  # 1 = uses RoPE


def _solution_yarn_score_scale(factor):
    attention_factor = 0.1 * math.log(factor) + 1 if factor > 1 else 1.0
    return attention_factor ** 2  # on cos and sin: q and k each carry it once


SOLUTIONS: dict = {  # exercise name -> a reference solution (kept out of the notebooks' visible cells)
    "slow_pairs": _solution_slow_pairs,
    "partial_rope": _solution_partial_rope,
    "layer_base": _solution_layer_base,
    "nope_layers": _solution_nope_layers,
    "yarn_score_scale": _solution_yarn_score_scale,
}

CHECKS: dict = {name: globals()[f"check_{name}"] for name in SOLUTIONS}  # exercise name -> its checker
