"""The rules every PositionalEncoding keeps (the protocol is `attention.PositionalEncoding`), checked
on a learner's own encoding before it trains: notebook 07 (section "your own encoding") uses it.

    problems = encoding_rule_problems(MyEncoding)   # [] when it keeps every rule (rule_report: + its hooks)

`encoding` is what you wrote: a PositionalEncoding subclass (built with its `from_config`, as
TinyLM builds a registered one), a function config -> encoding, or a name in ENCODINGS.

The rules, each checked hook by hook so a problem names the hook that broke it:

    implements a hook          at least one of add_to_input, rotate_qk, score_bias, value_bias,
                               edit_scores, token_state
    keeps shapes               add_to_input: x's shape; rotate_qk: (q', k') shaped as q, k;
                               score_bias: broadcastable to (batch, heads, Tq, Tk) without growing it;
                               value_bias: broadcastable to (batch, heads, Tq, head_dim);
                               edit_scores: the scores' shape (batch, heads, Tq, Tk);
                               token_state: None or a dict of (batch, *, T, *) tensors, tokens on dim 2
    keeps the dtype            float32 in, float32 out; float64 in (the encoding in float64), float64 out
    follows the device         the same calls on the meta device (no data: a stand-in for a GPU) must
                               work and return meta tensors; a tensor made without device= lands
                               on the CPU and breaks there, as it would on a GPU
    leaves its inputs alone    x, q, k, probs and the positions are unchanged after the call
    does not see the future    with the causal mask, the output at position t may depend only on
                               positions <= t: it must not change when the inputs after t change,
                               nor when they are cut off (a length-dependent encoding, e.g. t / T,
                               knows how many tokens follow). Checked on each hook's output (for
                               score_bias the entries the mask keeps, key <= query), then through a
                               whole TinyLM (logits at t when later tokens change or are removed)
    returns no NaN             no hook output (float64, random inputs) and no logit of the TinyLM is NaN
                               (checked before the future rule, which would otherwise call NaN != NaN a leak)
    works from a cache         for the hooks that read keys and inputs (edit_scores, token_state), a KV cache's
                               step must see what one full forward sees: edit_scores gives the last query's
                               row alone (over every key, positions (batch, T) as a cache passes them) as
                               in the whole, since the queries are the LAST Tq of the Tk keys; token_state
                               gives the same states for the tokens fed in two chunks (a token's state may
                               depend on its own x and position only: the cache never recomputes it)

The checks run in float64 (the dtype rule also in float32, the device rule on meta, in float32) with
the encoding's floating parameters nudged by random noise (so a table initialised to zeros cannot
hide a leak), on a copy: your encoding and the global RNG are untouched.
`posenc_lib.exercises.extension.check_encoding_rules` turns the problems into an exercise check;
`experiments.own_encoding.train_own_encoding` refuses to train an encoding that breaks one.
"""
from __future__ import annotations

import copy
import difflib
import inspect

import torch

from . import _checks
from .attention import HOOKS, PositionalEncoding, ScoreInputs, causal_mask, where_it_acts
from .i18n import Text, tr, your_line
from .model import ENCODINGS, TinyLM, TinyLMConfig

RULE_BUILD = "cannot be built"
RULE_NO_HOOK = "implements no hook"
RULE_CRASH = "raises an error"
RULE_SHAPE = "changes shapes"
RULE_DTYPE = "returns the wrong dtype"
RULE_DEVICE = "ignores the device"
RULE_IN_PLACE = "modifies its input in place"
RULE_FUTURE = "leaks future positions"
RULE_NAN = "returns NaN"
RULE_CACHE = "differs from a cache"
RULES = (RULE_BUILD, RULE_NO_HOOK, RULE_CRASH, RULE_SHAPE, RULE_DTYPE, RULE_DEVICE, RULE_IN_PLACE, RULE_FUTURE,
         RULE_NAN, RULE_CACHE)
# what a learner reads for each rule (the RULE_* strings above stay the keys: they are compared, in English)
_RULE_NAMES = {RULE_BUILD: Text("cannot be built", "无法构建"),
               RULE_NO_HOOK: Text("implements no hook", "没有实现任何钩子"),
               RULE_CRASH: Text("raises an error", "运行出错"),
               RULE_SHAPE: Text("changes shapes", "改变了形状"),
               RULE_DTYPE: Text("returns the wrong dtype", "返回的 dtype 不对"),
               RULE_DEVICE: Text("ignores the device", "忽略了设备"),
               RULE_IN_PLACE: Text("modifies its input in place", "原地修改了输入"),
               RULE_FUTURE: Text("leaks future positions", "泄露了未来位置"),
               RULE_NAN: Text("returns NaN", "返回了 NaN"),
               RULE_CACHE: Text("differs from a cache", "用 KV 缓存时结果不同")}

# the checks' sizes: SEQ positions; the output at positions 0..SEEN-1 must not depend on what follows
BATCH, SEQ, SEEN = 2, 9, 5
_MODEL_LAYERS, _MODEL_VOCAB = 2, 11
_NUDGE_SEED = 1234


class Problem(str):
    """One problem as the checker reports it, "[rule] where: detail" (the rule's name in the learner's
    language), which also keeps .rule (one of RULES, always English) and .where (the hook, or "TinyLM
    (...)"): code can ask which rules broke whatever the language."""

    rule: str
    where: str


def problem(rule: str, where: str, detail: str) -> Problem:
    """One problem (see Problem); `rule` is one of RULES."""
    name = str(_RULE_NAMES.get(rule, rule))
    found = Problem(f"[{name}] {where}{tr(': ', '：')}{detail}")
    found.rule, found.where = rule, where
    return found


# ------------------------------------------------------------------------------------ building it

def encoding_name(encoding) -> str:
    """A label for a registered name, a class, a function or an instance."""
    if isinstance(encoding, str):
        return encoding
    if isinstance(encoding, PositionalEncoding):
        return type(encoding).__name__
    return getattr(encoding, "__name__", type(encoding).__name__)


def build_encoding(encoding, config: TinyLMConfig) -> PositionalEncoding:
    """A fresh encoding from a name in ENCODINGS, a PositionalEncoding subclass (check_config, then
    from_config, as TinyLM does), a function config -> PositionalEncoding, or an instance (deep-copied).
    TypeError/ValueError name what is wrong; errors raised by the encoding's own code pass through."""
    if isinstance(encoding, str):
        _checks.choice("encoding", encoding, ENCODINGS)
        encoding = ENCODINGS[encoding]
    if isinstance(encoding, PositionalEncoding):
        return copy.deepcopy(encoding)
    if isinstance(encoding, type):
        if not issubclass(encoding, PositionalEncoding):
            raise TypeError(f"encoding must subclass posenc_lib.attention.PositionalEncoding (so TinyLM knows its "
                            f"hooks), got class {encoding.__name__} with bases "
                            f"{[b.__name__ for b in encoding.__bases__]}")
        encoding.check_config(config)
        built = encoding.from_config(config)
        what = f"{encoding.__name__}.from_config(config)"
    elif callable(encoding):
        built, what = encoding(config), f"{encoding_name(encoding)}(config)"
    else:
        raise TypeError(f"encoding must be a PositionalEncoding subclass, a function config -> encoding, an "
                        f"instance or a name in {sorted(ENCODINGS)}, got {type(encoding).__name__}")
    if not isinstance(built, PositionalEncoding):
        raise TypeError(f"{what} must return a PositionalEncoding, got {type(built).__name__}")
    return built


# --------------------------------------------------------------------------------------- the rules

def _nudged(enc: PositionalEncoding, dtype: torch.dtype) -> PositionalEncoding:
    """A copy in `dtype`, eval mode, its floating parameters plus N(0, 0.1^2) noise (drawn on the CPU)."""
    enc = copy.deepcopy(enc).to(dtype).eval()
    with torch.no_grad():
        for p in enc.parameters():
            if p.is_floating_point():
                p.add_(0.1 * torch.randn(p.shape, dtype=p.dtype, device=p.device))
    return enc


def _inputs(config: TinyLMConfig, dtype, device, seq: int = SEQ) -> dict:
    """Random inputs of every hook (causal attention probabilities for value_bias); on meta: empty."""
    shapes = {"x": (BATCH, seq, config.d_model), "q": (BATCH, config.num_heads, seq, config.head_dim),
              "k": (BATCH, config.num_heads, seq, config.head_dim)}
    shapes["scores"] = (BATCH, config.num_heads, seq, seq)
    if torch.device(device).type == "meta":
        out = {name: torch.empty(shape, dtype=dtype, device=device) for name, shape in shapes.items()}
        out["probs"] = torch.empty(BATCH, config.num_heads, seq, seq, dtype=dtype, device=device)
    else:
        out = {name: torch.randn(shape, dtype=dtype, device=device) for name, shape in shapes.items()}
        future = ~causal_mask(seq, seq, device=device)
        out["probs"] = out["scores"].masked_fill(future, float("-inf")).softmax(-1)  # rows sum to 1 over keys <= query
    out["positions"] = torch.arange(seq, device=device)
    return out


def _call(enc, hook: str, inputs: dict):
    """Call one hook the way MultiHeadAttention does (queries and keys at the same positions)."""
    pos = inputs["positions"]
    if hook == "add_to_input":
        return enc.add_to_input(inputs["x"], pos)
    if hook == "rotate_qk":
        return enc.rotate_qk(inputs["q"], inputs["k"], pos, pos)
    if hook == "score_bias":
        return enc.score_bias(inputs["q"], pos, pos)
    if hook == "token_state":
        return enc.token_state(inputs["x"], pos)
    if hook == "edit_scores":
        return enc.edit_scores(inputs["scores"], _score_inputs(enc, inputs))
    return enc.value_bias(inputs["probs"], pos, pos)


def _score_inputs(enc, inputs: dict, q_positions=None, k_positions=None) -> ScoreInputs:
    """edit_scores' inputs for self-attention over inputs' tokens, with the encoding's token state of them."""
    pos = inputs["positions"]
    state = enc.token_state(inputs["x"], pos)
    return ScoreInputs(inputs["q"], inputs["k"], pos if q_positions is None else q_positions,
                       pos if k_positions is None else k_positions, inputs["x"], state)


def _outputs(hook: str, out) -> list | str:
    """The hook's output as a list of tensors ([] for a score or value hook that returns None), or a
    string saying why it is not the right kind of thing."""
    if hook == "rotate_qk":
        if not (isinstance(out, (tuple, list)) and len(out) == 2 and all(isinstance(t, torch.Tensor) for t in out)):
            return tr(f"must return the pair (q, k) of tensors, got {type(out).__name__}",
                      f"必须返回一对张量 (q, k)，得到的却是 {type(out).__name__}")
        return list(out)
    if hook == "token_state" and isinstance(out, dict):
        if all(isinstance(t, torch.Tensor) for t in out.values()):
            return list(out.values())
        return tr("must return None or a dict name -> tensor, got a dict holding other things",
                  "必须返回 None 或 名字 -> 张量 的 dict，得到的 dict 里却有别的东西")
    if out is None and hook == "edit_scores":
        return tr("must return the scores (edited), got None", "必须返回（改写后的）分数，得到的却是 None")
    if out is None:
        return tr("must return x + (your term), got None",
                  "必须返回 x + (你的项)，得到的却是 None") if hook == "add_to_input" else []
    if hook == "token_state":
        return tr(f"must return None or a dict name -> tensor, got {type(out).__name__}",
                  f"必须返回 None 或 名字 -> 张量 的 dict，得到的却是 {type(out).__name__}")
    if not isinstance(out, torch.Tensor):
        allowed = tr("a tensor", "张量") if hook == "add_to_input" else tr("a tensor or None", "张量或 None")
        return tr(f"must return {allowed}, got {type(out).__name__}",
                  f"必须返回{allowed}，得到的却是 {type(out).__name__}")
    return [out]


def _broadcasts(shape, target) -> bool:
    return len(shape) <= len(target) and all(a in (b, 1) for a, b in zip(reversed(shape), reversed(target)))


def _shape_problem(hook: str, outs: list, inputs: dict) -> str | None:
    x, q, probs = inputs["x"], inputs["q"], inputs["probs"]
    if hook == "add_to_input" and outs[0].shape != x.shape:
        return tr(f"returned shape {tuple(outs[0].shape)} for x of shape {tuple(x.shape)}; return x + (your term), "
                  f"x's shape",
                  f"x 的形状是 {tuple(x.shape)}，返回的形状却是 {tuple(outs[0].shape)}；应返回 x + (你的项)，"
                  f"形状和 x 一样")
    if hook == "rotate_qk":
        for name, got in zip("qk", outs):
            if got.shape != inputs[name].shape:
                return tr(f"returned {name} of shape {tuple(got.shape)} for {name} of shape "
                          f"{tuple(inputs[name].shape)}: "
                          f"a rotation keeps (batch, heads, seq, head_dim)",
                          f"输入的 {name} 形状是 {tuple(inputs[name].shape)}，返回的 {name} 形状却是 "
                          f"{tuple(got.shape)}：旋转应保持形状 (batch, heads, seq, head_dim) 不变")
    if hook == "score_bias" and outs:
        target = (*q.shape[:2], q.shape[2], q.shape[2])
        if not _broadcasts(outs[0].shape, target):
            return tr(f"returned shape {tuple(outs[0].shape)}, which does not broadcast to the scores' "
                      f"(batch, heads, q_len, k_len) = {target}; e.g. (heads, q_len, k_len) or "
                      f"(1, heads, q_len, k_len)",
                      f"返回的形状 {tuple(outs[0].shape)} 无法广播到注意力分数的 (batch, heads, q_len, k_len) = "
                      f"{target}；可以用 (heads, q_len, k_len) 或 (1, heads, q_len, k_len)")
    if hook == "edit_scores" and outs[0].shape != inputs["scores"].shape:
        return tr(f"returned shape {tuple(outs[0].shape)} for scores of shape {tuple(inputs['scores'].shape)}: return "
                  f"the scores' shape (batch, heads, q_len, k_len)",
                  f"分数的形状是 {tuple(inputs['scores'].shape)}，返回的形状却是 {tuple(outs[0].shape)}：应返回和分数"
                  f"一样的形状 (batch, heads, q_len, k_len)")
    if hook == "token_state":
        seq = x.shape[1]
        for t in outs:
            if t.dim() != 4 or t.shape[0] != x.shape[0] or t.shape[2] != seq:
                return tr(f"returned a state of shape {tuple(t.shape)} for x of shape {tuple(x.shape)}: each must be "
                          f"(batch={x.shape[0]}, *, seq={seq}, *), the tokens on dim 2 as in a key",
                          f"x 的形状是 {tuple(x.shape)}，返回的状态形状却是 {tuple(t.shape)}：每个状态都应是 "
                          f"(batch={x.shape[0]}, *, seq={seq}, *)，像键一样把 token 放在第 2 维")
    if hook == "value_bias" and outs:
        target = (*probs.shape[:3], q.shape[-1])
        if not _broadcasts(outs[0].shape, target):
            return tr(f"returned shape {tuple(outs[0].shape)}, which does not broadcast to the attention output "
                      f"(batch, heads, q_len, head_dim) = {target}",
                      f"返回的形状 {tuple(outs[0].shape)} 无法广播到注意力输出的 "
                      f"(batch, heads, q_len, head_dim) = {target}")
    return None


def _visible(hook: str, outs: list, seen: int, seq: int) -> list:
    """The parts of a hook's output that positions 0..seen-1 use (score_bias, broadcast to (seq, seq):
    only key <= query)."""
    if hook in ("score_bias", "edit_scores") and outs:
        bias = outs[0]
        full = bias.expand(*bias.shape[:-2], seq, seq)[..., :seen, :seen]
        return [full.masked_fill(~causal_mask(seen, seen, device=bias.device), 0.0)]
    return [t[..., :seen, :] for t in outs]  # x: (B, T, D) -> its first `seen` rows; q, k, terms: (..., T, d)


def _changed_future(inputs: dict) -> dict:
    """The same inputs with every value at positions >= SEEN redrawn (probs: rows >= SEEN)."""
    out = dict(inputs)
    for name, dim in (("x", 1), ("q", 2), ("k", 2)):
        t = inputs[name].clone()
        t.narrow(dim, SEEN, t.shape[dim] - SEEN).copy_(torch.randn_like(t.narrow(dim, SEEN, t.shape[dim] - SEEN)))
        out[name] = t
    scores = inputs["scores"].clone()
    scores[..., SEEN:, :] = torch.randn_like(scores[..., SEEN:, :])
    scores[..., :SEEN, SEEN:] = torch.randn_like(scores[..., :SEEN, SEEN:])
    out["scores"] = scores
    probs = inputs["probs"].clone()
    seq = probs.shape[-1]
    future = ~causal_mask(seq, seq, device=probs.device)[SEEN:]
    probs[..., SEEN:, :] = torch.randn_like(probs[..., SEEN:, :]).masked_fill(future, float("-inf")).softmax(-1)
    out["probs"] = probs
    return out


def _cut(inputs: dict) -> dict:
    """The inputs cut to positions 0..SEEN-1 (a causal model must not notice)."""
    return {"x": inputs["x"][:, :SEEN], "q": inputs["q"][..., :SEEN, :], "k": inputs["k"][..., :SEEN, :],
            "probs": inputs["probs"][..., :SEEN, :SEEN], "positions": inputs["positions"][:SEEN],
            "scores": inputs["scores"][..., :SEEN, :SEEN]}


def _same(a: list, b: list) -> bool:
    return len(a) == len(b) and all(x.shape == y.shape and torch.allclose(x, y, rtol=1e-7, atol=1e-9)
                                    for x, y in zip(a, b))


def _error(err: Exception, *, line: bool = True) -> str:
    """The error's type and first line, and (line=True) the line of the learner's code that raised it, when
    there is one."""
    return f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}{your_line(err) if line else ''}"


def _hook_problems(enc: PositionalEncoding, hook: str, config: TinyLMConfig) -> list:
    """Every rule the hook breaks on the CPU (float64 and float32) and on the meta device."""
    found = []
    torch.manual_seed(_NUDGE_SEED)
    enc64 = _nudged(enc, torch.float64)
    inputs = _inputs(config, torch.float64, "cpu")
    before = {name: t.clone() for name, t in inputs.items()}
    try:
        out = _call(enc64, hook, inputs)
    except NotImplementedError:
        raise
    except Exception as err:  # noqa: BLE001 -- the learner's code: any crash is reported
        return [problem(RULE_CRASH, hook, tr(f"on float64 CPU inputs it raised {_error(err)}",
                                             f"在 CPU 上输入 float64 时抛出了 {_error(err)}"))]
    changed = [name for name in inputs if not torch.equal(inputs[name], before[name])]
    if changed:
        found.append(problem(RULE_IN_PLACE, hook, tr(f"it changed {', '.join(changed)} (an in-place op such as +=, "
                                                     f"add_, x[...] = or masked_fill_ on an input); "
                                                     f"return a new tensor: x = x + term",
                                                     f"它改动了 {', '.join(changed)}（对输入用了 +=、add_、"
                                                     f"x[...] = 或 masked_fill_ 这类原地操作）；"
                                                     f"应返回新张量：x = x + term")))
    outs = _outputs(hook, out)
    if isinstance(outs, str):
        return found + [problem(RULE_SHAPE, hook, outs)]
    shape = _shape_problem(hook, outs, inputs)
    if shape:
        return found + [problem(RULE_SHAPE, hook, shape)]
    wrong = [t.dtype for t in outs if t.dtype != torch.float64]
    if wrong:
        found.append(problem(RULE_DTYPE, hook, tr(f"float64 inputs (and a float64 encoding) gave {wrong[0]}: a tensor "
                                                  f"made without dtype= is float32; make it in the input's dtype "
                                                  f"(dtype=x.dtype, .to(q.dtype))",
                                                  f"输入是 float64（编码也是 float64），输出却是 {wrong[0]}：不指定 "
                                                  f"dtype= 新建的张量是 float32；要按输入的 dtype 来建"
                                                  f"（dtype=x.dtype、.to(q.dtype)）")))
    nan = _nan_problem(hook, outs)
    if nan:
        found.append(nan)  # NaN != NaN: the future rule below would call every NaN a leak
    if not found:
        found += _future_problems(enc64, hook, inputs, outs)
    if not found and hook in ("edit_scores", "token_state"):
        found += _cache_problems(enc64, hook, inputs, outs)
    try:
        out32 = _outputs(hook, _call(_nudged(enc, torch.float32), hook, _inputs(config, torch.float32, "cpu")))
        wrong = [] if isinstance(out32, str) else [t.dtype for t in out32 if t.dtype != torch.float32]
        if wrong:
            found.append(problem(RULE_DTYPE, hook, tr(f"float32 inputs gave {wrong[0]}: return the input's dtype "
                                                      f"(compute in float64 if you need to, then .to(x.dtype))",
                                                      f"输入是 float32，输出却是 {wrong[0]}：要返回输入的 dtype"
                                                      f"（需要的话可以先用 float64 算，再 .to(x.dtype)）")))
    except Exception as err:  # noqa: BLE001
        found.append(problem(RULE_CRASH, hook, tr(f"on float32 CPU inputs it raised {_error(err)}",
                                                  f"在 CPU 上输入 float32 时抛出了 {_error(err)}")))
    found += _device_problems(enc, hook, config)
    return found


def _nan_problem(hook: str, outs: list):
    """A problem when the hook's float64 output holds a NaN (None otherwise)."""
    count = sum(int(torch.isnan(t).sum()) for t in outs if t.is_floating_point())
    if not count:
        return None
    total = sum(t.numel() for t in outs)
    return problem(RULE_NAN, hook, tr(f"{count} of its {total} output values are NaN on random float64 inputs: look "
                                      "for 0/0, inf - inf, or a log/sqrt of a negative number (a log of a position or "
                                      "distance that can be 0 or negative, for one)",
                                      f"在随机的 float64 输入上，它的 {total} 个输出值中有 {count} 个是 NaN：检查一下"
                                      "有没有 0/0、inf - inf，或对负数取 log/sqrt（比如对可能为 0 或负数的位置、"
                                      "距离取 log）"))


def _future_problems(enc64, hook: str, inputs: dict, outs: list) -> list:
    """The hook's output at positions < SEEN, against the same with the later inputs changed or cut off."""
    seen = _visible(hook, outs, SEEN, SEQ)
    for how, other in ((tr("the inputs at positions >= {s} changed",
                           "在位置 >= {s} 的输入改动后变了"), _changed_future(inputs)),
                       (tr("the sequence was cut after position {t} (so it depends on the length)",
                           "在截掉位置 {t} 之后的序列后变了（说明它依赖序列长度）"), _cut(inputs))):
        try:
            again = _outputs(hook, _call(enc64, hook, other))
        except Exception as err:  # noqa: BLE001
            return [problem(RULE_CRASH, hook, tr(f"on a shorter or changed sequence it raised {_error(err)}",
                                                 f"在截短或改动过的序列上抛出了 {_error(err)}"))]
        if isinstance(again, str) or not _same(seen, _visible(hook, again, SEEN, other["positions"].numel())):
            part = (tr("the bias on keys <= query at", "偏置（键 <= 查询的部分）") if hook == "score_bias"
                    else tr("the scores on keys <= query at", "分数（键 <= 查询的部分）") if hook == "edit_scores"
                    else tr("its output at", "输出"))
            return [problem(RULE_FUTURE, hook, tr(f"{part} positions 0..{SEEN - 1} changed when "
                                                  f"{how.format(s=SEEN, t=SEEN - 1)}: position t may use positions "
                                                  f"<= t only (a mean, sum, cumsum from the end, or the length T over "
                                                  f"the sequence mixes in later tokens)",
                                                  f"位置 0..{SEEN - 1} 的{part}{how.format(s=SEEN, t=SEEN - 1)}："
                                                  f"位置 t 只能用到 <= t 的位置（在整个序列上取均值、求和、从末尾做 "
                                                  f"cumsum，或用到长度 T，都会把后面的 token 混进来）"))]
    return []


def _cache_problems(enc64, hook: str, inputs: dict, outs: list) -> list:
    """What a KV cache's step computes against the whole: edit_scores for the last query alone over every key
    (positions (batch, T), as a cache passes them); token_state for the tokens fed in two chunks."""
    x, pos = inputs["x"], inputs["positions"]
    try:
        if hook == "token_state":
            chunks = [enc64.token_state(x[:, part], pos[part]) for part in (slice(None, SEEN), slice(SEEN, None))]
            again = [torch.cat([chunk[name] for chunk in chunks], 2) for name in enc64.token_state(x, pos)]
            how = tr(f"the tokens were fed in two chunks (0..{SEEN - 1}, then the rest), as a cache feeds them: "
                     f"a token's state may use its own x and position only",
                     f"token 分两段送入（0..{SEEN - 1}，然后其余的），就像缓存那样：一个 token 的状态只能用它自己的 "
                     f"x 和位置")
        else:
            last = {**inputs, "q": inputs["q"][..., -1:, :], "x": x[:, -1:]}
            batched = pos.expand(x.shape[0], -1)                                   # (B, T), as a cache passes them
            scores_inputs = _score_inputs(enc64, inputs, batched[:, -1:], batched)._replace(q=last["q"], x=last["x"])
            again = [enc64.edit_scores(inputs["scores"][..., -1:, :], scores_inputs)]
            outs = [outs[0][..., -1:, :]]
            how = tr("the last query came alone over every key, as in a cached decoding step: the queries are the "
                     "LAST q_len of the k_len keys (causal_mask(q_len, k_len) says which keys each may see)",
                     "最后一个查询单独对所有键计算，就像缓存解码的一步：查询是 k_len 个键里的最后 q_len 个"
                     "（causal_mask(q_len, k_len) 给出每个查询能看到哪些键）")
    except Exception as err:  # noqa: BLE001
        return [problem(RULE_CRASH, hook, tr(f"as a cache calls it (fewer queries than keys, positions (batch, seq)) "
                                             f"it raised {_error(err)}",
                                             f"按缓存的方式调用（查询少于键，位置为 (batch, seq)）时"
                                             f"抛出了 {_error(err)}"))]
    if not _same(outs, again):
        return [problem(RULE_CACHE, hook, tr(f"its output changed when {how}", f"{how}，它的输出就变了"))]
    return []


def _device_problems(enc, hook: str, config: TinyLMConfig) -> list:
    try:
        meta = copy.deepcopy(enc).to("meta")
        out = _outputs(hook, _call(meta, hook, _inputs(config, torch.float32, "meta")))
    except Exception as err:  # noqa: BLE001
        error = _error(err, line=False)  # (what follows says which lines to look for)
        return [problem(RULE_DEVICE, hook, tr(f"on the meta device (a stand-in for a GPU: tensors without data) it "
                                              f"raised {error}. A tensor made without device= (torch.arange(n), "
                                              f"torch.zeros(...)) lands on the CPU: pass device=x.device (q.device, "
                                              f"positions.device). Meta tensors have no values, so .item(), int(t) "
                                              f"or a Python if on a tensor fail there too: keep them out of a hook",
                                              f"在 meta 设备上（用来代替 GPU：张量里没有数据）抛出了 {error}。"
                                              f"不指定 device= 新建的张量（torch.arange(n)、torch.zeros(...)）"
                                              f"会落在 CPU 上：要传 device=x.device（或 q.device、positions.device）。"
                                              f"meta 张量没有值，所以 .item()、int(t) 或拿张量做 Python 的 if 判断"
                                              f"在那里同样会失败：钩子里别用它们"))]
    if isinstance(out, str):
        return []  # reported on the CPU already
    devices = sorted({str(t.device) for t in out if t.device.type != "meta"})
    if devices:
        return [problem(RULE_DEVICE, hook, tr(f"inputs on the meta device (a stand-in for a GPU) gave a tensor on "
                                              f"{devices[0]}: make every tensor on the input's device "
                                              f"(device=x.device)",
                                              f"输入在 meta 设备上（用来代替 GPU），却得到了 {devices[0]} "
                                              f"上的张量：每个张量都要建在输入所在的设备上（device=x.device）"))]
    return []


def _model_problems(enc: PositionalEncoding, config: TinyLMConfig) -> list:
    """Through a whole causal TinyLM (float64): the logits at positions < SEEN must not change when the
    tokens after them change or are cut off."""
    try:
        torch.manual_seed(_NUDGE_SEED)
        model = TinyLM(_MODEL_VOCAB, encoding=_nudged(enc, torch.float64), d_model=config.d_model,
                       num_heads=config.num_heads, num_layers=_MODEL_LAYERS, max_len=config.max_len).double().eval()
        idx = torch.randint(0, _MODEL_VOCAB, (BATCH, SEQ), device="cpu")
        other = idx.clone()  # every token after SEEN - 1 replaced by another one
        other[:, SEEN:] = ((idx[:, SEEN:] + torch.randint(1, _MODEL_VOCAB, (BATCH, SEQ - SEEN), device="cpu"))
                           % _MODEL_VOCAB)
        with torch.no_grad():
            full = model(idx)[0][:, :SEEN]
            changed, cut = model(other)[0][:, :SEEN], model(idx[:, :SEEN])[0]
    except Exception as err:  # noqa: BLE001
        return [problem(RULE_CRASH, "TinyLM", tr(f"a causal TinyLM with this encoding raised {_error(err)}",
                                                 f"用这个编码的因果 TinyLM 抛出了 {_error(err)}"))]
    if bool(torch.isnan(full).any()):
        return [problem(RULE_NAN, f"TinyLM ({', '.join(where_it_acts(enc))})",
                        tr("the logits of a causal TinyLM with this encoding contain NaN (e.g. a score bias of "
                           "-inf on every key of a row, or inf - inf): the softmax of such a row is 0/0",
                           "用这个编码的因果 TinyLM 输出的 logits 含有 NaN（例如某一行的每个键都得到 -inf 的分数偏置，"
                           "或出现 inf - inf）：这样一行的 softmax 就是 0/0"))]
    for how, again in ((tr("the tokens after them changed", "改动了后面的 token"), changed),
                       (tr("the sequence was cut after them", "截掉了后面的序列"), cut)):
        if not _same([full], [again]):
            return [problem(RULE_FUTURE, f"TinyLM ({', '.join(where_it_acts(enc))})",
                            tr(f"the logits at positions 0..{SEEN - 1} changed when {how}: with the causal mask, "
                               f"something your hooks compute lets a position see the ones after it",
                               f"{how}，位置 0..{SEEN - 1} 的 logits 就变了：虽然有因果掩码，你的钩子算出的"
                               f"某个量仍让一个位置看到了它后面的位置"))]
    return []


def _no_hook_problem(enc: PositionalEncoding) -> str:
    cls = type(enc)
    own = [name for klass in cls.__mro__ if klass not in (PositionalEncoding, torch.nn.Module, object)
           for name, value in vars(klass).items() if inspect.isfunction(value)]
    near = {name: difflib.get_close_matches(name, HOOKS, n=1, cutoff=0.6) for name in own if name not in HOOKS}
    hints = [tr(f"{name}() looks like a misspelt {match[0]}()", f"{name}() 像是拼错了的 {match[0]}()")
             for name, match in near.items() if match]
    if "forward" in own:
        hints.append(tr("forward() is not a hook: MultiHeadAttention and TinyLM call the hooks, never forward",
                        "forward() 不是钩子：MultiHeadAttention 和 TinyLM 只调用那些钩子，从不调用 forward"))
    hint = f"{tr(' (', '（')}{tr('; ', '；').join(hints)}{tr(')', '）')}" if hints else ""
    return problem(RULE_NO_HOOK, cls.__name__, tr(f"it overrides none of {', '.join(HOOKS)}, so it adds no position "
                                                  f"information: the model would be NoPE{hint}",
                                                  f"{', '.join(HOOKS)} 这几个钩子一个都没有重写，"
                                                  f"所以它不提供任何位置信息：模型就成了 NoPE{hint}"))


def rule_report(encoding, config: TinyLMConfig | None = None) -> dict:
    """dict(name, hooks, problems): the hooks `encoding` overrides and every rule it breaks (see the
    module docstring), as "[rule] hook: what happened" strings ([] when it keeps them all).
    `encoding`: a PositionalEncoding subclass, a function config -> encoding, an instance or a
    registered name; config: the TinyLMConfig it is built from (default: a default TinyLM's,
    `TinyLMConfig(encoding="nope")`; notebook 07's checks pass the experiment's,
    `experiments.own_encoding.experiment_config()`). NotImplementedError from your code passes
    through; nothing of yours is modified, and the global RNG is restored afterwards."""
    config = TinyLMConfig(encoding="nope") if config is None else config
    if not isinstance(config, TinyLMConfig):
        raise TypeError(f"config must be a posenc_lib.model.TinyLMConfig or None, got {type(config).__name__}")
    report = {"name": encoding_name(encoding), "hooks": [], "problems": []}
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        try:
            enc = build_encoding(encoding, config)
        except NotImplementedError:
            raise
        except Exception as err:  # noqa: BLE001
            report["problems"].append(problem(RULE_BUILD, report["name"], _error(err)))
            return report
        report["hooks"] = hooks = where_it_acts(enc)
        if not hooks:
            report["problems"].append(_no_hook_problem(enc))
            return report
        for hook in hooks:
            report["problems"] += _hook_problems(enc, hook, config)
        if not report["problems"]:
            report["problems"] += _model_problems(enc, config)
    return report


def encoding_rule_problems(encoding, config: TinyLMConfig | None = None) -> list:
    """rule_report(encoding, config)["problems"]: [] when `encoding` keeps every rule."""
    return rule_report(encoding, config)["problems"]
