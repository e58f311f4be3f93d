"""Every model family in the installed transformers that defines a rotary embedding: configs.from_hf_config
against what the family's own code does (configs.measure runs it at a tiny size).

Cases. Every model_type: transformers' default config. A representative set of families, one for each way the
reader finds a layer's rotation (REPRESENTATIVES: plain half-split, interleaved with a partial factor, GPT-NeoX's
rotary_pct, MLA (DeepSeek-V3's rope_interleave switch, V3.2's fixed layout on its 'indexed_attention' layers),
Phi-3's rope-type renames, per-layer-type rope dicts, Gemma 4's per-layer head sizes, RoPE on
sliding layers only, q/k normalised after RoPE, a clockwise turn, linear-attention hybrids, a query scaling,
M-RoPE): also every scaling variant in VARIANTS (linear, dynamic, yarn, yarn with truncate false, yarn with
mscale/mscale_all_dim, llama3, longrope, proportional), set on the full-attention entry where the rope dict is
per layer type. The variants run on those families only, not on all 351 model_types, to keep the test near a
minute on 2 cores (one torch thread).

Each case is shrunk to a tiny size (2 heads of 32 dims, at most 6 layers, the layer pattern recomputed by
transformers; Gemma 4's full-attention heads 64), written out with to_dict() and read back by from_hf_config,
and, where the rope dict is flat, also read in the older form (top-level rope_theta and partial_rotary_factor,
rope_scaling with the legacy 'type' key) when transformers reads that form into the same rope parameters.
Both readings are compared with one run of the code, layer by layer: which layers turn q and k, which dims,
the layout, the direction, the q.q and k.k scores between positions 0, 1, 2, 3 to ~1e-5 (with the far position
to 1e-3: the families' float32 angles), and so the frequencies and the attention factor (p-RoPE's stopped
pairs: dims and layout through the scores only). Or the reader refuses with an error naming the config key, or
it states the layout as unknown (a family without a record: the layout is in code). A family transformers
cannot build or run this way is skipped with the reason. The counts are printed (pytest -s), by each of the three
test classes (the default configs in two halves, the variants), which pytest-xdist's --dist loadscope spreads over
the workers; the model_types are found when the first test asks (rope_model_types), not at collection.

Not seen here, tested in tests/test_configs_reader.py: DeepSeek-V3.2's indexer (its half-split q and k never reach
the attention function; test_deepseek_v32_indexer_turns_its_q_and_k_as_transformers), a query scaling by
position (Ministral 3, Mistral 4: it is in both runs of the code), dynamic NTK past max_position_embeddings (the
far position stays below it), M-RoPE on image positions (text positions are equal on the three axes). GPT-J and
CodeGen write their base in the code and have no rope parameters to vary: their default case only."""
import collections
import contextlib
import functools
import importlib.util
import math
import signal
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

from posenc_lib.configs import FAMILIES, from_hf_config  # noqa: E402
from posenc_lib.configs.measure import MAX_PARAMS, _analyse, capture  # noqa: E402

LAYERS = 6
HEAD_DIM = 32
LIMIT_S = 6
VARIANT_MAX_POSITIONS = 1024  # the far position 1023 lies past the variants' L0 = 256


def modeling_source(model_type: str) -> str:
    """The text of the family's modeling file ('' if it has none)."""
    root = Path(importlib.util.find_spec("transformers").origin).parent / "models"
    package = transformers.CONFIG_MAPPING[model_type].__module__.split(".")[2]
    path = root / package / f"modeling_{package}.py"
    return path.read_text(encoding="utf-8") if path.exists() else ""


@functools.cache
def rope_model_types() -> tuple:
    """model_types whose modeling file defines a *RotaryEmbedding class (found by reading the files). Found when a
    test first asks, not at collection: it imports every config module of transformers (seconds, per process)."""
    return tuple(sorted(t for t in transformers.CONFIG_MAPPING if "RotaryEmbedding(nn.Module)" in modeling_source(t)))


def tiny_default(model_type: str, rope=None) -> dict:
    """transformers' default (text) config for the family, at a tiny size, as a config.json dict. rope: a scaling
    variant (a function of the rotated dims' count and the family's entry -> the rope dict) set on the flat rope
    dict, or on the full-attention entry of a per-layer-type one."""
    text = transformers.CONFIG_MAPPING[model_type]().get_text_config()
    values = {k: v for k, v in text.to_dict().items() if not k.startswith("_") and k != "transformers_version"}
    named = getattr(type(text), "attribute_map", {})  # GPT-J, CodeGen: n_layer, n_embd, n_head in config.json

    def key(name: str) -> str:
        return named[name] if name not in values and named.get(name) in values else name
    if not isinstance(values.get(key("num_hidden_layers")), int) or not isinstance(values.get(key("hidden_size")), int):
        raise LookupError("no stack of layers with hidden_size (a vision, audio or codec part)")
    if values[key("num_hidden_layers")] > LAYERS:
        values[key("num_hidden_layers")] = LAYERS
        for name in ("layer_types", "no_rope_layers", "mlp_layer_types", "block_types_per_layer", "per_layer_config",
                     "layer_rope_theta"):
            values.pop(name, None)
    if values.pop("per_layer_config", None) is not None:  # recomputed by the config class from global_head_dim
        values["global_head_dim"] = 2 * HEAD_DIM
    if values.get(key("head_dim")):  # (JetMoE: kv_channels)
        values[key("head_dim")] = HEAD_DIM
    for name, small in (("qk_rope_head_dim", 16), ("qk_nope_head_dim", 16), ("v_head_dim", 16), ("rotary_dim", 16)):
        if values.get(name):
            values[name] = small
    if values.get("qk_rope_head_dim") and values.get("head_dim"):  # MLA: the rotary sizes by head_dim x partial
        partial = (values.get("rope_parameters") or {}).get("partial_rotary_factor", 1.0)
        values["head_dim"] = int(values["qk_rope_head_dim"] / partial)
    if isinstance(values.get(key("num_attention_heads")), int):
        values[key("num_attention_heads")] = 2
        values[key("hidden_size")] = 2 * HEAD_DIM
        if key("num_key_value_heads") in values:
            values[key("num_key_value_heads")] = 2
    params = values.get("rope_parameters")
    record = FAMILIES.get(text.model_type)
    if isinstance(params, dict) and not any(isinstance(v, dict) for v in params.values()) and isinstance(
            values.get("num_attention_heads"), int) and (  # (not a vision tower's num_heads)
            "mrope_section" in params or (record is not None and record.mrope)
            or "mrope_section" in modeling_source(model_type)):  # M-RoPE sections that fit the tiny head
        pairs = rotated_pairs(values, None, params)
        values["rope_parameters"] = {**params, "mrope_section": [pairs - 2 * (pairs // 3), pairs // 3, pairs // 3]}
    if rope is not None:  # a scaling variant: the family's base (and partial factor) with this scaling
        values["max_position_embeddings"] = VARIANT_MAX_POSITIONS
        params = values.get("rope_parameters") or {}
        nested = params and all(isinstance(v, dict) for v in params.values())
        if not params or (not nested and any(isinstance(v, dict) for v in params.values())):
            raise LookupError("no rope parameters to vary")
        target = ("full_attention" if "full_attention" in params else sorted(params)[0]) if nested else None
        entry = params[target] if nested else params
        kept = {k: entry[k] for k in ("rope_theta", "partial_rotary_factor", "mrope_section", "llama_4_scaling_beta")
                if k in entry}
        varied = {**kept, **rope(rotated_pairs(values, target, entry), entry)}
        values["rope_parameters"] = {**params, target: varied} if nested else varied
    config = type(text)(**{k: v for k, v in values.items() if k != "model_type"})
    out = {k: v for k, v in config.to_dict().items() if not k.startswith("_") and k != "transformers_version"}
    out["model_type"] = text.model_type
    return out


def rotated_pairs(values: dict, layer_type, entry: dict) -> int:
    """How many pairs turn at this size (for LongRoPE's factor lists and M-RoPE's sections)."""
    heads = values.get("num_attention_heads") or values.get("n_head")
    head = ((values.get("global_head_dim") if layer_type == "full_attention" else None)
            or values.get("qk_rope_head_dim") or values.get("head_dim")
            or (values.get("hidden_size") or values.get("n_embd")) // heads)
    return int(head * entry.get("partial_rotary_factor", 1.0)) // 2


def legacy_form(config: dict) -> dict:
    """The same config in the older form: rope_theta (and partial_rotary_factor) at the top level, the scaling in
    rope_scaling under its legacy key 'type'. LookupError (the reason) when there is no such form or transformers
    does not read it into the same rope parameters."""
    params = config.get("rope_parameters")
    if not isinstance(params, dict):
        raise LookupError("no rope parameters (the base is in the code)")
    if any(isinstance(v, dict) for v in params.values()):
        raise LookupError("rope parameters per layer type: no rope_theta + rope_scaling form")
    out = {k: v for k, v in config.items() if k != "rope_parameters"}
    for key in ("rope_theta", "partial_rotary_factor"):
        if key in params:
            out[key] = params[key]
    scaling = {k: v for k, v in params.items() if k not in ("rope_theta", "partial_rotary_factor", "rope_type")}
    if params.get("rope_type", "default") != "default" or scaling:
        out["rope_scaling"] = {"type": params.get("rope_type", "default"), **scaling}
    cls = type(transformers.CONFIG_MAPPING[config["model_type"]]().get_text_config())
    try:
        read = cls(**{k: v for k, v in out.items() if k != "model_type"}).rope_parameters
    except Exception as error:  # noqa: BLE001
        raise LookupError(f"transformers refuses the legacy form: {str(error).splitlines()[0][:80]}") from None
    if {k: v for k, v in (read or {}).items() if k != "type"} != {k: v for k, v in params.items() if k != "type"}:
        raise LookupError("transformers reads the legacy form into other rope parameters")
    return out


class TookTooLong(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: int):
    """A family whose tiny model still runs for long (a reference Mamba kernel ...) is skipped, not waited for."""
    def stop(signum, frame):
        raise TookTooLong(f"took longer than {seconds} s at the tiny size")
    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def unreorder(x: torch.Tensor, start: int, stop: int) -> torch.Tensor:
    """[..., a0 a1 ... | b0 b1 ...] on dims start:stop -> [..., a0 b0 a1 b1 ...] (DeepSeek's order undone)."""
    half = (stop - start) // 2
    pairs = torch.stack((x[..., start:start + half], x[..., start + half:stop]), dim=-1).flatten(-2)
    return torch.cat((x[..., :start], pairs, x[..., stop:]), dim=-1)


def scores(x: torch.Tensor) -> torch.Tensor:
    """x (batch, heads, positions, dim) -> every position's dot product with every other, per row and head."""
    return x @ x.transpose(-1, -2)


def check(config: dict, forms=("to_dict",), *, max_params: int = MAX_PARAMS, attention: bool = False) -> dict:
    """{form: ('matched' | 'no record' | 'refused' | 'skipped', detail)} for the config read in each form
    ("to_dict", "legacy"), both against one run of the code; raises AssertionError on a contradiction.
    'no record': a model_type without a family record, whose report says the layout (and which layers rotate,
    if not all) is not known from the config; its rotated dims and the layers' rotation are still checked where
    the report states them. max_params: the largest model configs.measure.capture may build. attention: also
    compare each layer's sliding window and q.k scale with what the layer hands to the attention function
    (compare_attention)."""
    read, captured, out = {}, None, {}
    for form in forms:
        try:
            given = config if form == "to_dict" else legacy_form(config)
        except LookupError as error:
            out[form] = "skipped", f"{form}: {error}"
            continue
        try:
            read[form] = from_hf_config(given)
        except (ValueError, TypeError) as error:
            assert "config[" in str(error), f"{form}: a refusal that names no key: {error}"
            out[form] = "refused", str(error).split(":")[0]
    if not read:
        return out
    try:
        captured = capture(config, max_params=max_params)
    except TookTooLong:
        raise
    except Exception as error:  # noqa: BLE001 -- transformers could not build or run it at this size
        return {**out, **{f: ("skipped", f"{type(error).__name__}: {str(error).splitlines()[0][:90]}") for f in read}}
    measured = {}  # layer -> what its code does (configs.measure._analyse), shared by the forms
    for form, ours in read.items():
        try:
            out[form] = compare(ours, captured, measured)
            if attention:
                compare_attention(ours, captured)
        except AssertionError as error:
            raise AssertionError(f"{form}: {error}") from None
    return out


def compare_attention(ours, captured) -> None:
    """Each attention layer's window and q.k scale against the sliding_window and scaling its code hands to the
    attention function (where it hands them: Llama's layers pass no window; a chunked layer's chunk is in its
    mask). A scaling of None is the attention function's default, q's head_dim^-1/2."""
    _, _, layers, _, told = captured
    for layer in ours.layers:
        if layer.index not in layers or layer.mixer != "attention" or "attention" in layer.unknown:
            continue
        given = told[layer.index]
        if "sliding_window" in given and layer.attention != "chunked":
            window = layer.window if layer.attention == "sliding" else None
            assert given["sliding_window"] == window, (
                f"layer {layer.index}: window {window}, the code hands sliding_window={given['sliding_window']}")
        if "scaling" in given and "score_scale" not in ours.unknown:
            code = given["scaling"] if given["scaling"] is not None else layers[layer.index][1].shape[-1] ** -0.5
            assert math.isclose(layer.score_scale, float(code), rel_tol=1e-6), (
                f"layer {layer.index}: score scale {layer.score_scale:.6g}, the code's scaling {float(code):.6g}")


def compare(ours, captured, measured: dict | None = None) -> tuple:
    """('matched' | 'no record', detail) for the reader's layers against the captured run; measured: a cache of
    each layer's _analyse, {layer: MeasuredLayer}, filled here (the same run compared with several readings)."""
    _, text, layers, position_ids, _ = captured
    measured = {} if measured is None else measured
    assert ours.num_layers == text.num_hidden_layers
    far, probed = int(position_ids[0, -1]), int(position_ids[0, 4])  # (a model numbering its frames: 0, 1, ... 9)
    unknown = False
    for layer in ours.layers:
        if layer.index not in layers:
            assert not layer.rope and layer.mixer != "attention", (
                f"layer {layer.index}: no attention call in the code, the reader says {layer.describe()}")
            continue
        q_before, q_after, k_before, k_after = layers[layer.index]
        if layer.index not in measured:
            measured[layer.index] = _analyse(layer.index, q_before, q_after, probed)
        code = measured[layer.index]
        if ours.family == "generic" and layer.rope != code.rope:  # the report says it does not know this
            return "no record", f"layer {layer.index} rotates: {code.rope} (which layers rotate is in the code)"
        assert layer.rope == code.rope, f"layer {layer.index}: rope {layer.rope}, the code: {code.describe()}"
        if not layer.rope:
            continue
        if layer.layout is None:
            unknown = True
            continue
        # p-RoPE's stopped pairs never turn, and pairs turning less than 1e-4 rad by the far position (a base of
        # 1e8 stretched by YaRN: Devstral 2) move q less than the probe sees: dims and layout through the scores
        whole_head = layer.rope_type == "proportional" or bool((layer.inv_freq * far < 1e-4).any())
        assert whole_head or layer.rotary_dims == code.rotary_dims, (layer.index, layer.rotary_dims,
                                                                     code.rotary_dims)
        assert layer.direction == code.direction, layer.index
        record = FAMILIES.get(ours.model_type)
        reordered = record is not None and record.reorders_pairs and layer.layout == "interleaved"
        if reordered:  # q, k reached the attention as [first of every pair | second]: put the pairs back
            q_before, k_before = unreorder(q_before, *layer.rotary_dims), unreorder(k_before, *layer.rotary_dims)
        for before, after in ((q_before, q_after), (k_before, k_after)):
            # a query scaling (Ministral 3) is in both runs of the code, so q before and after RoPE both carry it
            ours_after, code_after = scores(layer.apply(before, position_ids)), scores(after)
            size = float(code_after.abs().max())
            # positions 0-3: to 1e-5; with position `far`: many families compute angles in float32 (an error of
            # far * 2^-24 radians), so to 1e-3 there
            # q/k normalised after RoPE (NanoChat; Llama 4 with use_qk_norm): a factor on cos/sin cancels only up to
            # the norm's eps, which the reader leaves out (it reports the factor as 1): 1e-3 there
            near = 1e-3 if any("normalised after RoPE" in note for note in ours.notes) else 1e-5
            for part, tol in ((slice(0, 4), near), (slice(None), 1e-3)):
                torch.testing.assert_close(ours_after[..., part, part], code_after[..., part, part], rtol=0,
                                           atol=tol * size,
                                           msg=lambda m, layer=layer: f"layer {layer.index} scores: {m}")
        expected = code.layout if not reordered else "interleaved" if code.layout == "half" else None
        assert layer.layout == expected or whole_head, (
            f"layer {layer.index}: layout {layer.layout}, the code pairs {code.layout}")
    return ("no record", "layout unknown") if unknown else ("matched", "")


FORMS = ("to_dict", "legacy")
L0 = 256  # the variants' original_max_position_embeddings (VARIANT_MAX_POSITIONS = 4 * L0)
# name -> (pairs that turn, the family's rope entry) -> the variant's rope dict
VARIANTS = {
    "linear": lambda pairs, entry: {"rope_type": "linear", "factor": 4.0},
    "dynamic": lambda pairs, entry: {"rope_type": "dynamic", "factor": 2.0},
    "dynamic with L0": lambda pairs, entry: {"rope_type": "dynamic", "factor": 2.0,
                                             "original_max_position_embeddings": L0},
    "yarn": lambda pairs, entry: {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": L0},
    "yarn truncate=false": lambda pairs, entry: {"rope_type": "yarn", "factor": 4.0, "truncate": False,
                                                 "original_max_position_embeddings": L0},
    "yarn mscale": lambda pairs, entry: {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": L0,
                                         "mscale": 1.0, "mscale_all_dim": 0.5},
    "llama3": lambda pairs, entry: {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": L0,
                                    "low_freq_factor": 1.0, "high_freq_factor": 4.0},
    "longrope": lambda pairs, entry: {"rope_type": "longrope", "factor": 4.0, "original_max_position_embeddings": L0,
                                      "short_factor": [1.0 + 0.05 * i for i in range(pairs)],
                                      "long_factor": [1.0 + 0.5 * i for i in range(pairs)]},
    "proportional": lambda pairs, entry: {"rope_type": "proportional", "partial_rotary_factor": 0.5},
}
# one family for each way the reader finds a layer's rotation (the variants run on these only)
REPRESENTATIVES = ("llama", "glm", "gpt_neox", "phi3", "deepseek_v3", "deepseek_v32", "gemma3_text", "gemma4_text",
                   "cohere2", "llama4_text", "nanochat", "qwen3_next", "ministral3", "qwen3_vl_text")


@pytest.fixture
def one_thread():
    """One torch thread: the tiny models run ~10x faster on a shared 2-core machine than with two."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


class Sweep:
    """What a run of cases found: counts by (form, outcome), the reasons by outcome, the contradictions, and the
    model_types whose default config is read without a family record."""

    def __init__(self):
        self.counts, self.reasons, self.failures = collections.Counter(), collections.defaultdict(list), []
        self.without_record = []

    def run(self, model_type: str, name: str, rope=None) -> None:
        try:
            config = tiny_default(model_type, rope)
        except Exception as error:  # noqa: BLE001
            self.counts["all", "skipped"] += 1
            self.reasons["skipped"].append(f"{model_type}/{name}: config: {str(error).splitlines()[0][:90]}")
            return
        if rope is None and read_without_a_record(config):
            self.without_record.append(model_type)
        try:
            with time_limit(LIMIT_S):
                results = check(config, FORMS)
        except TookTooLong as error:
            results = {form: ("skipped", str(error)) for form in FORMS}
        except AssertionError as error:
            self.failures.append(f"{model_type}/{name}: {str(error).splitlines()[0][:200]}")
            return
        for form, (outcome, detail) in results.items():
            self.counts[form, outcome] += 1
            if detail or outcome != "matched":
                self.reasons[outcome].append(f"{model_type}/{name}/{form}: {detail}")

    def print(self, title: str) -> None:
        print(f"\nconfigs sweep, {title}; each case read through to_dict() and through rope_theta + rope_scaling "
              f"(legacy)")
        for form in ("all", *FORMS):
            line = ", ".join(f"{outcome} {n}" for (f, outcome), n in sorted(self.counts.items()) if f == form)
            print(f"  {form}: {line}")
        print(f"  contradicted: {len(self.failures)}")
        if self.without_record or "variants" not in title:
            print(f"  read without a family record (code-only facts reported as unknown): {len(self.without_record)}: "
                  + ", ".join(self.without_record))
        for outcome, lines in self.reasons.items():
            print(f"  {outcome}:\n    " + "\n    ".join(lines))
        if self.failures:
            print("  contradicted:\n    " + "\n    ".join(self.failures))


def read_without_a_record(config: dict) -> bool:
    """Whether the reader reads this default (text) config without a family record: what only the family's code
    decides is reported as unknown for it (vision, audio and codec parts with a rotary embedding included)."""
    try:
        return from_hf_config(config).family == "generic"
    except (ValueError, TypeError):  # refused by key: counted by the sweep itself
        return False


def sweep_defaults(capsys, half: int) -> None:
    """Every other model_type's default config (half 0: the 1st, 3rd, ...; half 1: the 2nd, 4th, ...)."""
    model_types = rope_model_types()[half::2]
    found = Sweep()
    for model_type in model_types:
        found.run(model_type, "default")
    with capsys.disabled():
        found.print(f"default configs, model_types {half + 1}, {half + 3}, ... of the {len(rope_model_types())} with "
                    f"a rotary embedding: {len(model_types)}")
    assert not found.failures


# Three classes: pytest-xdist's --dist loadscope (make test) gives each class to one worker, so the cases run on both
# cores at once (the default configs in two halves, the scaling variants beside them).
class TestDefaultConfigsInEvenPlaces:
    def test_every_family_matches_its_code_or_is_refused_by_key(self, capsys, one_thread):
        sweep_defaults(capsys, 0)


class TestDefaultConfigsInOddPlaces:
    def test_every_family_matches_its_code_or_is_refused_by_key(self, capsys, one_thread):
        sweep_defaults(capsys, 1)


class TestScalingVariants:
    def test_every_variant_matches_the_code_or_is_refused_by_key(self, capsys, one_thread):
        found = Sweep()
        for model_type in REPRESENTATIVES:
            assert model_type in rope_model_types(), f"{model_type}: not a model_type with a rotary embedding any more"
            for name, rope in VARIANTS.items():
                found.run(model_type, name, rope)
        with capsys.disabled():
            found.print(f"scaling variants: {len(REPRESENTATIVES)} model_types x {len(VARIANTS)} variants")
        assert not found.failures


def test_muse_glimmer_hands_attention_queries_scaled_by_qk_scale_factor(one_thread):
    """What the Muse Glimmer record notes beside its score scale, measured: each q reaches attention RMS-normalised
    and times qk_scale_factor (its RMS over the head is the factor, to the norm's eps), each k RMS-normalised
    (RMS 1), with the scaling head_dim^-1/2 (compare_attention checks that one)."""
    config = {**tiny_default("muse_glimmer_text"), "qk_scale_factor": 2.5}
    read = from_hf_config(config)
    assert any("= 2.5: the softmax sees 2.5 x score_scale" in note for note in read.notes)
    captured = capture(config)
    for q_before, _, k_before, _ in captured.layers.values():
        torch.testing.assert_close(q_before.pow(2).mean(-1).sqrt(), torch.full(q_before.shape[:-1], 2.5,
                                   dtype=q_before.dtype), rtol=1e-3, atol=0)
        torch.testing.assert_close(k_before.pow(2).mean(-1).sqrt(), torch.ones(k_before.shape[:-1],
                                   dtype=k_before.dtype), rtol=1e-3, atol=0)
