"""What the model's own code does with positions, measured: `measure(config)` (needs transformers).

config.json holds numbers; which dims pair, which layers turn q and k, which way they turn, are in the
family's modeling code. `measure` runs that code at a tiny size and reads the answer off it:

  1. the config (transformers' own class for its model_type) is shrunk where it does not touch positions:
     2 heads of the same head size, a small MLP, 4 experts, a small vocabulary (MLA: a low-rank q of the head's
     full rank; an indexer of 2 small heads); head_dim, rotary settings, rope parameters and the layer count and
     types are kept;
  2. the model is built with an attention function of ours that records the q and k each layer hands to
     it (after RoPE) and returns zeros, so every layer's input does not depend on what attention saw; its
     LayerNorm biases are drawn at random (a LayerNorm on q before RoPE, Persimmon's, would leave every q
     with dims summing to 0, a plane on which step 4's fit cannot tell the map along (1, ..., 1));
  3. it is run twice on the same random inputs: as it is, and with its rotary-embedding module answering
     cos = 1, sin = 0 (no turn): the second run gives q and k before RoPE;
  4. per layer, the map M(m) from q before to q after RoPE at position m is fitted (least squares over all
     heads and batch rows, in float64), at positions 0, 1, 2, 3 and far (4095, or the context length - 1 if
     shorter). The relative map S = M(0)^T M(3), which is what q.k sees between positions 0 and 3, tells:
     which dims turn (M(m) differs from M(0) there, at some m), how they pair (the one other dim
     each turned dim mixes with), the direction (sign of S[p, i] for the pair (i, p), i < p: + is
     counter-clockwise, the course's convention), the frequency of each pair
     (its angle over distance 3, divided by 3, refined over distance far)
     and the attention factor (the length of M(0)'s turned columns: cos and sin at position 0 are (a, 0)).

What it reports is what reaches the attention: a permutation applied to q and k alike before the call
(DeepSeek's apply_rotary_pos_emb_interleave writes each rope slice as [first of every pair | second of every
pair]) does not change q.k and is not visible here; the layout then shows as "half". A layer that never
calls the attention function (linear attention, a recurrent block, cross-attention without image input)
has no q and k and is reported as such. An attention factor cancelled by a q/k normalisation after RoPE
measures as 1, which is what the scores see. A sparse-attention indexer's own q and k (DeepSeek-V3.2's, which
only choose the keys) never reach the attention function: not measured here (tests/test_configs_reader.py checks
the reader's ModelPositions.indexer against DeepseekV32Indexer itself).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import torch

from .. import _checks
from ..i18n import tr
from .limits import check_sizes
from .report import kind_text as report_kind, layer_ranges, table_cell

PROBE = "posenc_probe"
# the same probe with sdpa's masks, for 'indexed_attention' layers (DeepSeek-V3.2's DSA): they hand their causal mask
# to the indexer (transformers builds no mask for an attention without a mask function). Not for every family: with
# a mask function transformers builds sliding masks, which some default configs cannot (no window set).
PROBE_MASKED = "posenc_probe_masked"
_SMALL = {"intermediate_size": 32, "moe_intermediate_size": 16, "shared_expert_intermediate_size": 16,
          "ffn_hidden_size": 32, "num_experts": 4, "n_routed_experts": 4, "num_local_experts": 4,
          "num_experts_per_tok": 2, "n_shared_experts": 1, "n_group": 1, "topk_group": 1, "kv_lora_rank": 16,
          "linear_num_value_heads": 2, "linear_num_key_heads": 2, "linear_key_head_dim": 16,
          "linear_value_head_dim": 16, "vocab_size_per_layer_input": 128, "index_n_heads": 2}
# inputs the probe does not feed, switched off (they do not touch positions): Gemma 4's per-layer token inputs
_OFF = {"hidden_size_per_layer_input": 0}


@dataclass(frozen=True, eq=False)
class MeasuredLayer:
    """One layer as its code behaves. attends: the layer called the attention function (False: a layer without
    q and k over positions); rope: q changes with its position; rotary_dims: (start, stop) of the dims that
    turn, or None when they are not one block; layout: "half", "interleaved", or None when the pairs are neither;
    direction: +1 counter-clockwise (the course's), -1 the other way; inv_freq: (pairs,) float64, the angle per
    token of each pair in the layout's order; attention_factor: a on cos and sin; head_dim: of q."""
    index: int
    attends: bool
    rope: bool
    head_dim: int | None = None
    rotary_dims: tuple | None = None
    layout: str | None = None
    direction: int | None = None
    inv_freq: torch.Tensor | None = None
    attention_factor: float | None = None

    def describe(self) -> str:
        if not self.attends:
            return tr("no attention call (no q and k)", "没有调用注意力（没有 q 和 k）")
        if not self.rope:
            return tr("q does not change with position (NoPE)", "q 不随位置变化（NoPE）")
        start, stop = self.rotary_dims or (None, None)
        turn = tr("counter-clockwise", "逆时针") if self.direction == 1 else tr("clockwise", "顺时针")
        layout = self.layout or tr("neither layout", "两种布局都不是")
        return tr(f"RoPE {layout}, dims {start}:{stop} of {self.head_dim}, turning {turn}, "
                  f"cos/sin x {self.attention_factor:.6g}",
                  f"RoPE {layout}，第 {start}:{stop} 维（共 {self.head_dim} 维），{turn}旋转，"
                  f"cos/sin 乘 {self.attention_factor:.6g}")


@dataclass(frozen=True, eq=False)
class Measured:
    """`measure`'s answer: the model_type, the transformers class that ran, and one MeasuredLayer per layer."""
    model_type: str
    model_class: str
    layers: tuple

    def table(self) -> str:
        groups: dict = {}
        for layer in self.layers:
            key = layer.describe()
            if layer.rope:
                key += tr(f", longest wavelength {table_cell(float(2 * math.pi / layer.inv_freq.min()), 4)}",
                          f"，最长波长 {table_cell(float(2 * math.pi / layer.inv_freq.min()), 4)}")
            groups.setdefault(key, []).append(layer.index)
        lines = [tr(f"{self.model_type}, measured by running transformers' {self.model_class} at a tiny size:",
                    f"{self.model_type}：在极小尺寸下运行 transformers 的 {self.model_class} 测得：")]
        lines += [tr(f"  layers {layer_ranges(ix)}: {text}", f"  第 {layer_ranges(ix)} 层：{text}")
                  for text, ix in groups.items()]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


# ----------------------------------------------------------------------------- building the tiny model
def tiny_config(config: dict):
    """transformers' config object for this config.json, shrunk where it does not touch positions (see the
    module docstring). Returns the text config (the part whose layers measure runs)."""
    import transformers
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict (a config.json read with json.load), got {type(config).__name__}")
    check_sizes(config)
    fields = dict(config)
    model_type = fields.pop("model_type", None)
    if not isinstance(model_type, str):
        raise ValueError("config['model_type'] is missing: transformers needs it to find the family's code")
    if model_type not in transformers.CONFIG_MAPPING:
        raise ValueError(f"config['model_type'] = {model_type!r} is not a model_type the installed transformers "
                         f"{transformers.__version__} knows")
    text = transformers.AutoConfig.for_model(model_type, **fields).get_text_config()
    values = text.to_dict()
    named = getattr(type(text), "attribute_map", {})  # GPT-J's config.json says n_embd, n_head; JetMoE kv_channels
    values = {k: values.get(named[k]) for k in ("hidden_size", "num_attention_heads", "head_dim")
              if k in named} | values
    head_dim = values.get("head_dim") or values["hidden_size"] // values["num_attention_heads"]
    heads = 2
    small = {"num_attention_heads": heads, "num_key_value_heads": min(values.get("num_key_value_heads") or 2, heads)}
    qk = (values.get("qk_nope_head_dim") or 0) + (values.get("qk_rope_head_dim") or 0)
    if qk and "q_lora_rank" in values:  # MLA: a low-rank q of full rank for its head, so q spans the head
        small["q_lora_rank"] = qk if values["q_lora_rank"] else None  # (V3.2's indexer needs one: not None)
    if values.get("index_head_dim"):  # a DSA indexer (V3.2): its heads hold the rope slice and a few more dims
        small["index_head_dim"] = min(values["index_head_dim"], (values.get("qk_rope_head_dim") or 0) + 16)
    small["hidden_size"] = heads * max(head_dim, qk)
    if "head_dim" in values and values["head_dim"]:
        small["head_dim"] = head_dim
    small.update({k: v for k, v in _SMALL.items() if isinstance(values.get(k), int) and values[k] > v})
    small.update({k: v for k, v in _OFF.items() if values.get(k)})
    small["vocab_size"] = 128  # special token ids point into it (their values do not matter here)
    for key, v in values.items():
        if key.endswith(("token_id", "token_ids")) and v is not None:
            small[key] = [i % 128 for i in v] if isinstance(v, list) else v % 128 if isinstance(v, int) else v
    values.update({k: v for k, v in small.items() if k in values})
    for k in named:  # back to the family's own names
        if k in values and named[k] in values:
            values[named[k]] = values.pop(k)
    values.pop("model_type", None)
    values = {k: v for k, v in values.items() if not k.startswith("_") and k not in ("transformers_version",)}
    return type(text)(**values)


def _model_class(text):
    import importlib

    import transformers
    mapping = transformers.models.auto.modeling_auto.MODEL_MAPPING_NAMES
    name = mapping.get(text.model_type)
    module = importlib.import_module(type(text).__module__.replace(".configuration_", ".modeling_"))
    if isinstance(name, str) and hasattr(module, name):
        return getattr(module, name)
    for attr in dir(module):  # a text model of a multimodal family: the model class built on this config class
        cls = getattr(module, attr)
        if (isinstance(cls, type) and issubclass(cls, transformers.PreTrainedModel)
                and getattr(cls, "config_class", None) is type(text) and attr.endswith("Model")):
            return cls
    raise ValueError(f"no model class for {type(text).__name__} in {module.__name__}")


def _layer_index(model, n: int) -> dict:
    """id(module) -> the layer it belongs to, from the model's list of n decoder layers."""
    for _, child in model.named_modules():
        if isinstance(child, torch.nn.ModuleList) and len(child) == n:
            return {id(m): i for i, layer in enumerate(child) for m in layer.modules()}
    raise ValueError(f"no list of {n} layers in {type(model).__name__}")


def _identity_rotary(out):
    """The rotary module's answer with no turn: cos = 1, sin = 0 (its own shapes and order)."""
    if isinstance(out, torch.Tensor) and out.is_complex():  # Llama 4: e^(i angle) as one complex tensor
        return torch.ones_like(out)
    if isinstance(out, tuple) and len(out) == 2:
        a, b = out
        if torch.all(a.reshape(-1, a.shape[-1])[0] == 0):  # (sin, cos) order: sin is zero at position 0
            return torch.zeros_like(a), torch.ones_like(b)
        return torch.ones_like(a), torch.zeros_like(b)
    raise ValueError(f"the rotary-embedding module returns {type(out).__name__}, not (cos, sin)")


MAX_PARAMS = 3_000_000  # the largest tiny model capture builds unless told otherwise


class CapturedLayer(NamedTuple):
    """q and k of one layer as its attention received them, without and with the rotary turn: each
    (batch, heads, 5, head_dim) float64."""
    q_before: torch.Tensor
    q_after: torch.Tensor
    k_before: torch.Tensor
    k_after: torch.Tensor


class Captured(NamedTuple):
    """What `capture` recorded: the model class's name, the tiny text config it ran, {layer: CapturedLayer}, the
    position_ids, and {layer: the scaling and sliding_window the layer handed to the attention function, those it
    passed}."""
    model_class: str
    text: object
    layers: dict
    position_ids: torch.Tensor
    told: dict


def capture(config: dict, *, seed: int = 0, max_params: int = MAX_PARAMS) -> Captured:
    """Run the tiny model twice (with and without its rotary turn); return what it recorded (`Captured`).
    Positions are 0, 1, 2, 3 and far = min(max_position_embeddings, 4096) - 1 in every row (far shows the slowest
    pairs turning, below the length where dynamic NTK or LongRoPE would change the frequencies); enough rows that
    batch x heads >= the q head size (the fit of M needs as many independent q vectors as dims). A model that
    ignores position_ids and numbers its frames 0, 1, ... itself is recorded at those positions (Captured's
    position_ids says which: the fifth is then 4)."""
    import transformers
    from transformers import AttentionInterface, masking_utils

    seed = _checks.positive_int("seed", seed, allow_zero=True)
    max_params = _checks.positive_int("max_params", max_params)
    text = tiny_config(config)
    seen: list = []

    def probe(module, query, key, value, attention_mask, **kwargs):
        told = {k: kwargs[k] for k in ("scaling", "sliding_window") if k in kwargs}  # what the layer hands over
        seen.append((module, query.detach().double(), key.detach().double(), told))
        b, _, t, _ = query.shape
        return torch.zeros(b, t, query.shape[1], value.shape[-1], dtype=query.dtype, device=query.device), None

    AttentionInterface.register(PROBE, probe)
    AttentionInterface.register(PROBE_MASKED, probe)
    masking_utils.AttentionMaskInterface.register(PROBE_MASKED, masking_utils.sdpa_mask)
    # every position through every layer: Gemma 4's KV-shared layers would keep only the last position (and index
    # the per-layer inputs switched off above) unless hidden states are asked for
    text.output_hidden_states = True
    text._attn_implementation = PROBE_MASKED if "indexed_attention" in (getattr(text, "layer_types", None) or ()) \
        else PROBE
    cls = _model_class(text)
    torch.manual_seed(seed)
    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()
    try:
        with torch.device("meta"):  # the size first: a family with sizes the shrink does not know is refused
            size = sum(p.numel() for p in cls(text).parameters())
        if size > max_params:
            raise ValueError(f"{cls.__name__} still has {size:,} parameters after shrinking (the family sizes "
                             f"something this shrink does not know): not run")
        model = cls(text).eval().double()  # float64: the measured angles are not float32 rounding
    finally:
        transformers.logging.set_verbosity(verbosity)
    for module in model.modules():  # a mean-subtracting LayerNorm on q before RoPE (Persimmon) leaves q where its
        if isinstance(module, torch.nn.LayerNorm) and module.bias is not None:  # dims sum to 0, and the fit cannot
            torch.nn.init.normal_(module.bias)  # tell the map on (1, ..., 1): a random bias moves q off that plane
    layer_of = _layer_index(model, text.num_hidden_layers)
    rotaries = [m for name, m in model.named_modules() if type(m).__name__.endswith("RotaryEmbedding")
                and "vision" not in name.lower()]
    if not rotaries:
        raise ValueError(f"{cls.__name__} has no rotary-embedding module to switch off")
    values = text.to_dict()  # (Gemma 4 refuses text.head_dim: its heads differ per layer, in per_layer_config)
    named = getattr(type(text), "attribute_map", {})  # JetMoE's head_dim is its kv_channels
    dims = [values.get(k) for k in ("head_dim", "qk_head_dim", named.get("head_dim"))]
    dims += [(values.get("qk_nope_head_dim") or 0) + (values.get("qk_rope_head_dim") or 0),
             text.hidden_size // text.num_attention_heads]
    layer_configs = values.get("per_layer_config")  # per-layer head sizes (Gemma 4's global_head_dim)
    if isinstance(layer_configs, dict):
        dims += [c.get("head_dim") for c in layer_configs.values() if isinstance(c, dict)]
    batch = (max(d for d in dims if isinstance(d, int)) + 8) // text.num_attention_heads + 1
    hidden = torch.randn(batch, 5, text.hidden_size, generator=torch.Generator().manual_seed(seed),
                         dtype=torch.float64)
    far = min(getattr(text, "max_position_embeddings", None) or 4096, 4096) - 1
    position_ids = torch.tensor([0, 1, 2, 3, far])[None].expand(batch, 5)
    try:
        runs = [_run(model, hidden, position_ids, rotaries, seen, layer_of, turn) for turn in (False, True)]
    except RuntimeError:  # kernels without float64 (grouped expert matmuls): float32, rounding in the angles
        model, hidden = model.float(), hidden.float()
        runs = [_run(model, hidden, position_ids, rotaries, seen, layer_of, turn) for turn in (False, True)]
    (before, _), (after, handed) = runs
    if (isinstance(handed, torch.Tensor) and handed.dim() == 2 and handed.shape[-1] != position_ids.shape[-1]
            and handed.shape[-1] >= 5 and torch.equal(handed[0], torch.arange(handed.shape[-1]))):
        # a model that numbers its frames itself (Nemotron 3.5 Transcribe's word-timestamp head upsamples them and
        # counts 0, 1, ..., ignoring position_ids): the positions its rotary module was handed
        position_ids = handed.expand(batch, -1)
    if not after:
        raise ValueError(f"{cls.__name__}'s layers do not call transformers' attention interface: nothing to record")
    layers = {i: CapturedLayer(q_before=before[i].q, q_after=after[i].q, k_before=before[i].k, k_after=after[i].k)
              for i in after if i in before}
    return Captured(model_class=cls.__name__, text=text, layers=layers, position_ids=position_ids,
                    told={i: after[i].told for i in layers})


class _Seen(NamedTuple):
    """One attention call: q and k as it received them, and what the layer handed it (scaling, sliding_window)."""
    q: torch.Tensor
    k: torch.Tensor
    told: dict


def _run(model, hidden, position_ids, rotaries, seen, layer_of, turn: bool) -> tuple:
    """One forward pass; ({layer: _Seen}, the position_ids the first rotary module was handed, or None).
    turn=False: rotary modules answer cos = 1, sin = 0."""
    seen.clear()
    handed = []
    handles = [rotaries[0].register_forward_hook(
        lambda mod, args, out: handed.append(args[1] if len(args) > 1 else None))]
    handles += [] if turn else [r.register_forward_hook(lambda mod, args, out: _identity_rotary(out))
                                for r in rotaries]
    try:
        with torch.no_grad():
            model(inputs_embeds=hidden, position_ids=position_ids, use_cache=False)
    finally:
        for h in handles:
            h.remove()
    return ({layer_of[id(m)]: _Seen(q, k, told) for m, q, k, told in seen if id(m) in layer_of},
            handed[0] if handed else None)


def _fit(before: torch.Tensor, after: torch.Tensor) -> tuple:
    """Per position t, M_t with after[..., t, :] = before[..., t, :] @ M_t^T, fitted over batch and heads (one
    batched least-squares solve): (positions, head_dim, head_dim), and each fit's largest residual."""
    x = before.movedim(-2, 0).reshape(before.shape[-2], -1, before.shape[-1])  # (positions, batch x heads, d)
    y = after.movedim(-2, 0).reshape(after.shape[-2], -1, after.shape[-1])
    maps = torch.linalg.lstsq(x, y).solution.transpose(-1, -2)
    return maps, (x @ maps.transpose(-1, -2) - y).abs().amax(dim=(1, 2))


def _analyse(index: int, before: torch.Tensor, after: torch.Tensor, far: int, tol: float = 1e-5) -> MeasuredLayer:
    """One layer's facts from q before and after RoPE at positions (0, 1, 2, 3, far, ...): far is the fifth."""
    d = before.shape[-1]
    maps, residuals = _fit(before, after)
    residuals = residuals / after.abs().max()
    if bool((residuals > 1e-3).any()):
        raise ValueError(f"layer {index}: q after RoPE is not a linear function of q before it "
                         f"(relative residual {float(residuals.max()):.2g})")
    m0 = maps[0]
    near, far_map = m0.T @ maps[3], m0.T @ maps[4]  # what q.k sees between position 0 and 3, and 0 and far
    size = float(torch.diagonal(m0.T @ m0).max()) ** 0.5
    moved = (maps[1:] - m0).abs().amax(dim=(0, 1))  # (d,) per input dim: how far its column moves
    changed = torch.nonzero(moved > tol * size).flatten().tolist()
    if not changed:
        return MeasuredLayer(index=index, attends=True, rope=False, head_dim=d, rotary_dims=(0, 0),
                             attention_factor=1.0)
    start, stop = changed[0], changed[-1] + 1
    r = stop - start
    block = list(range(start, stop)) == changed and r % 2 == 0
    mix = near.abs() + far_map.abs()
    mix.fill_diagonal_(-1.0)
    partner = dict(zip(changed, mix[:, changed].argmax(dim=0).tolist()))  # the one other dim each turned dim mixes with
    layout, pairs = None, None
    if block and all(partner[j] - start == (j - start) ^ 1 for j in changed):
        layout, pairs = "interleaved", [(start + 2 * i, start + 2 * i + 1) for i in range(r // 2)]
    elif block and all(partner[j] == (j + r // 2 if j < start + r // 2 else j - r // 2) for j in changed):
        layout, pairs = "half", [(start + i, start + i + r // 2) for i in range(r // 2)]
    if pairs is None:
        pairs = sorted({tuple(sorted((j, partner[j]))) for j in changed})
    first, second = torch.tensor(pairs).T  # (pairs,) each: the dims i < p of each pair
    coarse = torch.atan2(near[second, first], near[first, first]) / 3  # |3 theta| < pi
    fine = torch.atan2(far_map[second, first], far_map[first, first])
    turns = torch.round((coarse * far - fine) / (2 * math.pi))  # whole turns the far angle wrapped
    angles = (fine + 2 * math.pi * turns) / far
    direction = 1 if float(angles.sum()) > 0 else -1
    factor = float(m0[:, first].norm(dim=0).mean())
    return MeasuredLayer(index=index, attends=True, rope=True, head_dim=d,
                         rotary_dims=(start, stop) if block else None, layout=layout, direction=direction,
                         inv_freq=angles.abs(), attention_factor=factor)


def measure(config: dict) -> Measured:
    """What the installed transformers' code for config['model_type'] does with positions, layer by layer
    (see the module docstring for how). config: a config.json as a dict (a multimodal wrapper is measured
    through its text model). Raises ImportError without transformers, ValueError when the family's code
    cannot be run this way (the message says why), naming a size above configs.limits.SIZE_LIMITS."""
    check_sizes(config)
    try:
        import transformers  # noqa: F401
    except ImportError as error:
        raise ImportError("configs.measure runs the family's code: it needs transformers installed") from error
    captured = capture(config)
    text, layers = captured.text, captured.layers
    far = int(captured.position_ids[0, 4])
    out = []
    for i in range(text.num_hidden_layers):
        if i not in layers:
            out.append(MeasuredLayer(index=i, attends=False, rope=False))
            continue
        out.append(_analyse(i, layers[i].q_before, layers[i].q_after, far))
    return Measured(model_type=text.model_type, model_class=captured.model_class, layers=tuple(out))


def side_by_side(config: dict) -> str:
    """What the config says (from_hf_config, the family record) beside what the code does (measure), one line
    per layer kind, and whether they agree on rotation, dims, layout and direction."""
    from .reader import FAMILIES, from_hf_config
    read, measured = from_hf_config(config), measure(config)
    record = FAMILIES.get(read.model_type)
    groups: dict = {}
    for ours, code in zip(read.layers, measured.layers):
        # DeepSeek's interleaved pairs reach the attention written as [first of every pair | second]: seen as half
        reordered = record is not None and record.reorders_pairs and (ours.layout, code.layout) == ("interleaved",
                                                                                                   "half")
        agree = ours.rope == code.rope and (not ours.rope or (
            ours.layout is not None and ours.rotary_dims == code.rotary_dims
            and (ours.layout == code.layout or reordered) and ours.direction == code.direction))
        verdict = (tr("agree", "一致") + ("" if not (agree and reordered) else tr(
            " (the code turns interleaved pairs, then hands each rope slice to attention reordered as [first of every "
            "pair | second of every pair], for q and k alike: q.k unchanged, so the code's side reads as half)",
            "（代码旋转交错的维度对，再把每个 RoPE 切片按 [每对的第一维 | 每对的第二维] 重排后交给注意力，q 与 k 同样"
            "重排：q·k 不变，所以代码一侧读作 half）"))) if agree else (tr("the config does not say", "配置没有说明")
                                                   if ours.rope and ours.layout is None else tr("DIFFER", "不一致"))
        key = (report_kind(ours), code.describe(), verdict)
        groups.setdefault(key, []).append(ours.index)
    lines = []
    for (said, done, verdict), indices in groups.items():
        lines += [tr(f"layers {layer_ranges(indices)}: {verdict}", f"第 {layer_ranges(indices)} 层：{verdict}"),
                  tr(f"  config says: {said}", f"  配置所说：{said}"),
                  tr(f"  code does:   {done}", f"  代码所做：{done}")]
    return "\n".join(lines)
