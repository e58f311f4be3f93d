"""The report of `configs`: a ModelPositions as rows, a plain-text table and one line per kind of layer,
in the learner's language (i18n.tr). Pure functions of the data model; nothing here reads a config."""
from __future__ import annotations

from ..i18n import Text, display_width as _width, ljust as _ljust, tr

# The one table of layer-kind names a learner reads (reports, tables, figures): the attention of a layer that
# attends over positions (LayerPositions.attention), and the mixer of a layer without positions of its own
# (LayerPositions.mixer). The keys are the data model's values, in English whatever the language.
KIND_NAMES = {
    "full": Text("full", "全注意力"), "sliding": Text("sliding", "滑动窗口"), "chunked": Text("chunked", "分块"),
    "linear attention": Text("linear attention", "线性注意力"), "recurrent": Text("recurrent", "循环"),
    "cross-attention": Text("cross-attention", "交叉注意力"), "convolution": Text("short convolution", "短卷积"),
}


def table_cell(value, digits: int = 6) -> str:
    """A report table's cell: "-" for None, a float to `digits` significant digits, anything else as str."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def layer_ranges(indices) -> str:
    """[0, 1, 2, 4, 6, 7] -> '0-2,4,6-7'; an evenly spaced list [1, 3, 5, 7] -> '1-7 every 2'."""
    steps = {b - a for a, b in zip(indices, indices[1:])}
    if len(indices) >= 3 and len(steps) == 1 and steps != {1}:
        step = steps.pop()
        return tr(f"{indices[0]}-{indices[-1]} every {step}", f"{indices[0]}-{indices[-1]} 每 {step} 层")
    parts, start = [], indices[0]
    for a, b in zip(indices, indices[1:] + [None]):
        if b != a + 1:
            parts.append(str(start) if start == a else f"{start}-{a}")
            start = b
    return ",".join(parts)


def kind_name(kind: str) -> str:
    """An attention kind ("full", "sliding", "chunked") or a mixer ("linear attention", "recurrent" ...) as a
    learner reads it (KIND_NAMES); a kind the table lacks as it is."""
    return str(KIND_NAMES.get(kind, kind))


class KindLabel:
    """A kind of layer as figures label it ("RoPE, sliding", "linear attention" ...: plots.production.layer_kind),
    in the language shown when it is used (str(), an f-string), its words from KIND_NAMES."""

    __slots__ = ("kind",)

    def __init__(self, kind: str):
        self.kind = kind

    def __str__(self) -> str:
        if self.kind.startswith("RoPE, "):
            return "RoPE" + tr(", ", "，") + kind_name(self.kind.removeprefix("RoPE, "))
        return kind_name(self.kind)

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def __repr__(self) -> str:
        return f"KindLabel({self.kind!r})"


def kind_text(layer) -> str:
    """What one layer does with positions, in a few words (the key that groups layers into kinds)."""
    where = tr("full causal", "全局因果") if layer.causal else tr("full bidirectional", "全局双向")
    if layer.window is not None:
        where = f"{kind_name(layer.attention)} {layer.window}"
    if "attention" in layer.unknown:  # no record and no layer_types: the pattern is in the code
        where = tr("unknown", "未知")
    if layer.mixer != "attention":
        name = kind_name(layer.mixer)
        return tr(f"no positions: a {name} layer", f"没有位置信息：{name}层")
    if not layer.rope:
        extra = tr(", query temperature", "，查询温度") if layer.temperature else ""
        return tr(f"NoPE, attention {where}{extra}", f"NoPE，注意力：{where}{extra}")
    start, stop = layer.rotary_dims
    dims = (tr("all dims", "全部维度") if (start, stop) == (0, layer.head_dim)
            else tr(f"dims {start}:{stop} of {layer.head_dim}", f"第 {start}:{stop} 维（共 {layer.head_dim} 维）"))
    if "rotary_dims" in layer.unknown:  # no record, MLA keys: the head size and the rotated slice are in the code
        dims = tr("dims unknown", "维度未知")
    factor = ("" if layer.attention_factor == 1
              else tr(f", cos/sin x {layer.attention_factor:.6g}", f"，cos/sin 乘 {layer.attention_factor:.6g}"))
    layout = layout_name(layer.layout) + ("" if layer.direction > 0 else tr(" (turning clockwise)", "（顺时针旋转）"))
    dims += _stopped_pairs(layer)
    if layer.temperature is not None:  # Ministral 3: q scaled after RoPE by position
        factor += tr(", query scaled by position", "，查询按位置缩放")
    rope = f"RoPE {layout}" if "rope" not in layer.unknown else tr(
        f"RoPE if its code rotates (unknown), layout {layout}", f"RoPE（代码是否旋转：未知），布局{layout}")
    return tr(f"{rope}, {dims}, base {layer.base:g}, {layer.rope_type}{factor}, attention {where}",
              f"{rope}，{dims}，底数 {layer.base:g}，{layer.rope_type}{factor}，注意力：{where}")


def _stopped_pairs(layer) -> str:
    """p-RoPE (Gemma 4): " (k of n pairs turn)" when the slowest pairs have frequency 0, else ""."""
    if layer.inv_freq is None:
        return ""
    turning, pairs = int((layer.inv_freq != 0).sum()), layer.inv_freq.numel()
    return "" if turning == pairs else tr(f" ({turning} of {pairs} pairs turn)", f"（{pairs} 对中 {turning} 对旋转）")


def layout_name(layout) -> str:
    """The layout column: "half", "interleaved", or "unknown" when nothing read says which."""
    return tr("unknown", "未知") if layout is None else layout


def layer_line(layer) -> str:
    """One line: what this layer does with positions."""
    return tr(f"layer {layer.index}: ", f"第 {layer.index} 层：") + kind_text(layer)


def rows(model) -> list:
    """One dict per distinct kind of layer of a ModelPositions: the report as data."""
    out = []
    for _, indices in model.kinds():
        layer = model.layers[indices[0]]
        others = [i for i in range(model.num_layers) if i not in indices]
        ranges = layer_ranges(indices)
        if len(ranges) > 16 and others:  # "0-2,4-6,8-10,..." reads better as what it leaves out
            ranges = tr(f"all but {layer_ranges(others)}", f"除 {layer_ranges(others)} 外的各层")
        waves = layer.wavelengths
        attention = (kind_name(layer.mixer) if layer.mixer != "attention" else
                     kind_name(layer.attention) + ("" if layer.window is None else f" {layer.window}")
                     + ("" if not layer.temperature else tr(" + query temperature", " + 查询温度") if not layer.rope
                        else tr(" + query scaled by position", " + 查询按位置缩放")))
        out.append({
            "layers": ranges, "count": len(indices), "rope": layer.rope,
            "layout": layout_name(layer.layout) if layer.rope else None,
            "rotary_dims": tr(f"{layer.rotary_dims[0]}:{layer.rotary_dims[1]} of {layer.head_dim}",
                              f"{layer.rotary_dims[0]}:{layer.rotary_dims[1]}（共 {layer.head_dim} 维）")
            + _stopped_pairs(layer),
            "base": layer.base, "rope_type": layer.rope_type, "attention_factor": layer.attention_factor,
            "attention": attention,
            # p-RoPE's stopped pairs (frequency 0) never turn: the longest wavelength of the pairs that do
            "longest_wavelength": None if waves is None else float(waves[waves.isfinite()].max()),
            "score_scale": layer.score_scale, "temperature": layer.temperature is not None,
        })
        out[-1].update({column: tr("unknown", "未知") for column in model.unknown if column in out[-1]})
    return out


def table(model) -> str:
    """The report as plain text: a head line, one line per kind of layer, then the notes."""
    encoding = {"rope": tr("rope", "旋转位置编码（RoPE）"),
                "learned absolute": tr("learned absolute", "可学习位置嵌入（绝对位置）"),
                "none": tr("none in attention (no layer turns q and k)", "NoPE（没有层旋转 q 和 k）"),
                }.get(model.position_encoding, model.position_encoding)
    rules = model.family if model.family != "generic" else tr("no family record", "无模型系列记录")
    head = (tr(f"{model.model_type} ({rules}): {model.num_layers} layers, "
               f"positions: {encoding}, max_position_embeddings {model.max_position_embeddings}",
               f"{model.model_type}（{rules}）：{model.num_layers} 层，"
               f"用{encoding}，max_position_embeddings {model.max_position_embeddings}")
            + ("" if model.original_max_position_embeddings is None
               else tr(f" (the scaling starts from length {model.original_max_position_embeddings})",
                       f"（缩放的起点长度 {model.original_max_position_embeddings}）")))
    columns = ("layers", "rope", "layout", "rotary_dims", "base", "rope_type", "attention_factor", "attention",
               "longest_wavelength")
    titles = {"layers": tr("layers", "层"), "rope": tr("rope", "用 RoPE"), "layout": tr("layout", "布局"),
              "rotary_dims": tr("rotary_dims", "旋转维度"), "base": tr("base", "底数"),
              "attention": tr("attention", "注意力"), "longest_wavelength": tr("longest_wavelength", "最长波长")}
    headers = [titles.get(c, c) for c in columns]  # rope_type, attention_factor: config keys, as they are
    cells = [[table_cell(row[c]) for c in columns] for row in rows(model)]
    widths = [max(_width(c), *(_width(r[k]) for r in cells)) for k, c in enumerate(headers)]
    lines = [head, "  ".join(_ljust(c, w) for c, w in zip(headers, widths))]
    lines += ["  ".join(_ljust(v, w) for v, w in zip(r, widths)) for r in cells]
    if model.unknown:
        unknown = tr(", ", "、").join(titles.get(c, c) for c in model.unknown)
        lines.append(tr(f"{unknown}: unknown (not in config.json): {model.layout_from}",
                        f"{unknown}：未知（不在 config.json 里）：{model.layout_from}"))
    elif any(layer.rope and layer.layout is None for layer in model.layers):
        lines.append(tr(f"layout unknown: {model.layout_from}", f"布局未知：{model.layout_from}"))
    if model.defaults_used:
        lines.append(tr(f"defaults (absent from the config, the family's defaults): {', '.join(model.defaults_used)}",
                        f"默认值（配置里没有，取该系列的默认值）：{', '.join(model.defaults_used)}"))
    lines += [tr(f"note: {n}", f"注：{n}") for n in model.notes]
    return "\n".join(lines)
