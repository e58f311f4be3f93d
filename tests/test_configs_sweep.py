"""Every model family in the installed transformers that defines a rotary embedding: configs.from_hf_config
against what the family's own code does (configs.measure runs it at a tiny size).

For each family: transformers' default config (then YaRN and dynamic-NTK variants of it), shrunk to a tiny size (2 heads of 32
dims, at most 6 layers, the layer pattern recomputed by transformers), written out with to_dict() and read
back by from_hf_config. Each case either matches the code layer by layer (which layers turn q and k, which
dims, the layout, the direction, and the q.q and k.k scores between positions 0, 1, 2, 3 to ~1e-5, with position 4095 to 1e-3: the
families' float32 angles),
or the reader refuses with an error naming the config key, or it states the layout as unknown (a family
without a record: the layout is in code). A family transformers cannot build or run this way is skipped with
the reason. The counts are printed (pytest -s)."""
import collections
import contextlib
import importlib.util
import signal
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

from posenc_lib.configs import FAMILIES, from_hf_config  # noqa: E402
from posenc_lib.configs.measure import _analyse, capture  # noqa: E402

LAYERS = 6
HEAD_DIM = 32
LIMIT_S = 6


def rope_model_types() -> list:
    """model_types whose modeling file defines a *RotaryEmbedding class (found by reading the files)."""
    root = Path(importlib.util.find_spec("transformers").origin).parent / "models"
    found = []
    for model_type, cls in transformers.CONFIG_MAPPING.items():
        package = cls.__module__.split(".")[2]
        path = root / package / f"modeling_{package}.py"
        if path.exists() and "RotaryEmbedding(nn.Module)" in path.read_text(encoding="utf-8"):
            found.append(model_type)
    return sorted(found)


def tiny_default(model_type: str, rope=None) -> dict:
    """transformers' default (text) config for the family, at a tiny size, as a config.json dict."""
    text = transformers.CONFIG_MAPPING[model_type]().get_text_config()
    values = {k: v for k, v in text.to_dict().items() if not k.startswith("_") and k != "transformers_version"}
    if not isinstance(values.get("num_hidden_layers"), int) or not isinstance(values.get("hidden_size"), int):
        raise LookupError("no stack of layers with hidden_size (a vision, audio or codec part)")
    n = values.get("num_hidden_layers")
    if isinstance(n, int) and n > LAYERS:
        values["num_hidden_layers"] = LAYERS
        for key in ("layer_types", "no_rope_layers", "mlp_layer_types", "block_types_per_layer"):
            values.pop(key, None)
    if values.get("head_dim"):
        values["head_dim"] = HEAD_DIM
    for key, small in (("qk_rope_head_dim", 16), ("qk_nope_head_dim", 16), ("v_head_dim", 16)):
        if values.get(key):
            values[key] = small
    if values.get("qk_rope_head_dim") and values.get("head_dim"):  # MLA families size their rotary by head_dim
        values["head_dim"] = values["qk_rope_head_dim"]
    heads = values.get("num_attention_heads")
    if isinstance(heads, int) and isinstance(values.get("hidden_size"), int):
        values["num_attention_heads"], values["num_key_value_heads"] = 2, 2
        values["hidden_size"] = 2 * HEAD_DIM
    if rope is not None:  # a scaling variant: the family's base (and partial factor) with this scaling
        params = values.get("rope_parameters") or {}
        if not params or any(isinstance(v, dict) for v in params.values()):
            raise LookupError("rope parameters per layer type: no flat variant")
        values["rope_parameters"] = {**{k: params[k] for k in ("rope_theta", "partial_rotary_factor") if k in params},
                                     **rope}
    config = type(text)(**{k: v for k, v in values.items() if k != "model_type"})
    out = {k: v for k, v in config.to_dict().items() if not k.startswith("_") and k != "transformers_version"}
    out["model_type"] = text.model_type
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


def check(config: dict) -> tuple:
    """('matched' | 'no record' | 'refused' | 'skipped', detail); raises AssertionError on a contradiction.
    'no record': a model_type without a family record, whose report says the layout (and which layers rotate,
    if not all) is not known from the config; its rotated dims and the layers' rotation are still checked where
    the report states them."""
    try:
        ours = from_hf_config(config)
    except (ValueError, TypeError) as error:
        assert "config[" in str(error), f"a refusal that names no key: {error}"
        return "refused", str(error).split(":")[0]
    try:
        _, text, layers, position_ids = capture(config)
    except Exception as error:  # noqa: BLE001 -- transformers could not build or run it at this size
        return "skipped", f"{type(error).__name__}: {str(error).splitlines()[0][:90]}"
    assert ours.num_layers == text.num_hidden_layers
    far = int(position_ids[0, -1])
    unknown = False
    for layer in ours.layers:
        if layer.index not in layers:
            assert not layer.rope and layer.mixer != "attention", (
                f"layer {layer.index}: no attention call in the code, the reader says {layer.describe()}")
            continue
        q_before, q_after, k_before, k_after = layers[layer.index]
        measured = _analyse(layer.index, q_before, q_after, far)
        if ours.family == "generic" and layer.rope != measured.rope:  # the report says it does not know this
            return "no record", f"layer {layer.index} rotates: {measured.rope} (which layers rotate is in the code)"
        assert layer.rope == measured.rope, f"layer {layer.index}: rope {layer.rope}, the code: {measured.describe()}"
        if not layer.rope:
            continue
        if layer.layout is None:
            unknown = True
            continue
        assert layer.rotary_dims == measured.rotary_dims, (layer.index, layer.rotary_dims, measured.rotary_dims)
        assert layer.direction == measured.direction, layer.index
        record = FAMILIES.get(ours.model_type)
        reordered = record is not None and record.reorders_pairs and layer.layout == "interleaved"
        if reordered:  # q, k reached the attention as [first of every pair | second]: put the pairs back
            q_before, k_before = unreorder(q_before, *layer.rotary_dims), unreorder(k_before, *layer.rotary_dims)
        for before, after in ((q_before, q_after), (k_before, k_after)):
            ours_after, size = scores(layer.apply(before, position_ids)), float(scores(after).abs().max())
            # positions 0-3: to 1e-5; with position `far`: many families compute angles in float32 (an error of
            # far * 2^-24 radians), so to 1e-3 there
            # q/k normalised after RoPE (NanoChat; Llama 4 with use_qk_norm): a factor on cos/sin cancels only up to
            # the norm's eps, which the reader leaves out (it reports the factor as 1): 1e-3 there
            near = 1e-3 if any("normalised after RoPE" in note for note in ours.notes) else 1e-5
            for part, tol in ((slice(0, 4), near), (slice(None), 1e-3)):
                torch.testing.assert_close(ours_after[..., part, part], scores(after)[..., part, part], rtol=0,
                                           atol=tol * size, msg=lambda m: f"layer {layer.index} scores: {m}")
        assert layer.layout == (measured.layout if not reordered else "interleaved" if measured.layout == "half"
                                else None), f"layer {layer.index}: layout {layer.layout}, the code pairs {measured.layout}"
    return ("no record", "layout unknown") if unknown else ("matched", "")


MODEL_TYPES = rope_model_types()
VARIANTS = {"default": None,
            "yarn": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024},
            "dynamic": {"rope_type": "dynamic", "factor": 2.0}}


def test_every_family_matches_its_code_or_is_refused_by_key(capsys):
    counts, reasons, failures = collections.Counter(), collections.defaultdict(list), []
    for model_type in MODEL_TYPES:
        for name, rope in VARIANTS.items():
            try:
                config = tiny_default(model_type, rope)
            except Exception as error:  # noqa: BLE001
                counts["skipped"] += 1
                reasons["skipped"].append(f"{model_type}/{name}: config: {str(error).splitlines()[0][:90]}")
                break
            try:
                with time_limit(LIMIT_S):
                    outcome, detail = check(config)
            except TookTooLong as error:
                outcome, detail = "skipped", str(error)
            except AssertionError as error:
                failures.append(f"{model_type}/{name}: {str(error).splitlines()[0][:200]}")
                break
            counts[outcome] += 1
            if detail or outcome != "matched":
                reasons[outcome].append(f"{model_type}/{name}: {detail}")
            if outcome != "matched":
                break  # the variants of a family not matched by default would say no more
    with capsys.disabled():
        print(f"\nconfigs sweep over {len(MODEL_TYPES)} model_types with a rotary embedding, {len(VARIANTS)} cases each "
              f"(a model_type stops at its first case that is not matched): "
              + ", ".join(f"{k} {v}" for k, v in counts.items()) + f", contradicted {len(failures)}")
        for outcome, lines in reasons.items():
            print(f"  {outcome}:\n    " + "\n    ".join(lines))
        if failures:
            print("  contradicted:\n    " + "\n    ".join(failures))
    assert not failures
