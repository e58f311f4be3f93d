"""Positions beyond 1-D (posenc_lib.multidim): 2-D axial RoPE against transformers' Pixtral and Qwen-VL vision
towers, M-RoPE and its interleaved variant against Qwen2-VL / Qwen2.5-VL / Qwen3-VL's rotary embeddings and
get_rope_index, the properties the notebook relies on (scores depend on coordinate differences only, text
tokens get plain RoPE), devices and dtypes, and a clear error naming the parameter for every bad input.

Precision: transformers computes the angles in float32, the library in float64; positions here stay below 64,
where transformers' float32 angles are within ~1e-6 of exact, so the course-wide tolerance 1e-5 holds (test_rope.py
splits the float32 error off at long positions). Position ids are integers and compared exactly.
"""
import pytest
import torch
from conftest import is_meta
from transformers import PixtralVisionConfig
from transformers.models.pixtral import modeling_pixtral as hf_pixtral
from transformers.models.qwen2_5_vl import configuration_qwen2_5_vl as cfg_qwen25, modeling_qwen2_5_vl as hf_qwen25
from transformers.models.qwen2_vl import configuration_qwen2_vl as cfg_qwen2, modeling_qwen2_vl as hf_qwen2
from transformers.models.qwen3_vl import configuration_qwen3_vl as cfg_qwen3, modeling_qwen3_vl as hf_qwen3

from posenc_lib import apply_rope, layout_permutation, rope_inv_freq
from posenc_lib.multidim import (
    MROPE_PRESETS,
    apply_axial_rope,
    apply_mrope,
    apply_multiaxis_rope,
    axial_rope_frequencies,
    mrope_axes,
    mrope_position_ids,
    mrope_token_types,
    multiaxis_cos_sin,
    patch_positions,
)

ATOL = 1e-5
LONG = torch.long


def _full(half):
    """transformers' full-width table [c, c] from the library's half-width one."""
    return torch.cat((half, half), dim=-1)


def _scores(q, k):
    return q @ k.transpose(-2, -1)


# ============================================================================ 2-D axial RoPE vs transformers
def _pixtral_config(head_dim=16, base=100.0):
    return PixtralVisionConfig(hidden_size=4 * head_dim, num_attention_heads=4, intermediate_size=32,
                               num_hidden_layers=1, image_size=64, patch_size=4,
                               rope_parameters={"rope_type": "axial", "rope_theta": base})


def _qwen_vision_config(module, head_dim=16, base=100.0, **extra):
    return module(depth=1, embed_dim=4 * head_dim, num_heads=4, hidden_size=4 * head_dim, patch_size=2,
                  temporal_patch_size=2,
                  in_channels=3, spatial_merge_size=2, rope_parameters={"rope_type": "axial", "rope_theta": base},
                  **extra)


def _capture(module):
    """Record the (args, output) of every call of `module` (a forward hook)."""
    calls = []
    module.register_forward_hook(lambda mod, args, out: calls.append((args, out)))
    return calls


@pytest.mark.parametrize("head_dim,base", [(16, 100.0), (64, 10000.0)])
def test_pixtral_frequencies_and_tables_match_transformers(head_dim, base):
    rotary = hf_pixtral.PixtralVisionRotaryEmbedding(_pixtral_config(head_dim, base))
    freq, axis = axial_rope_frequencies(head_dim, base=base, style="pixtral")
    positions = patch_positions(5, 7)                                       # (2, 35): rows, cols
    cos, sin = rotary(torch.zeros(1, dtype=torch.float32), positions.T)    # transformers takes (N, 2)
    mine = multiaxis_cos_sin(positions, freq, axis)
    torch.testing.assert_close(_full(mine[0]), cos, atol=ATOL, rtol=0)
    torch.testing.assert_close(_full(mine[1]), sin, atol=ATOL, rtol=0)


def test_pixtral_model_orders_patches_row_major_and_rotates_like_apply_axial_rope():
    torch.manual_seed(0)
    config = _pixtral_config()
    model = hf_pixtral.PixtralVisionModel(config).eval()
    calls = _capture(model.patch_positional_embedding)
    height, width = 3, 5                                                    # patches; 4 x 4 pixels each
    with torch.no_grad():
        model(torch.randn(1, 3, 4 * height, 4 * width))
    (_, hf_positions), (cos, sin) = calls[0]
    assert torch.equal(hf_positions.T, patch_positions(height, width))       # row-major (row, col)
    q, k = torch.randn(2, 1, 4, height * width, 16)                          # (batch, heads, patches, head_dim)
    hf_q, hf_k = hf_pixtral.apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=0)
    positions = patch_positions(height, width)
    torch.testing.assert_close(apply_axial_rope(q, positions, base=100.0, style="pixtral"), hf_q, atol=ATOL, rtol=0)
    torch.testing.assert_close(apply_axial_rope(k, positions, base=100.0, style="pixtral"), hf_k, atol=ATOL, rtol=0)


QWEN_VISION = [(hf_qwen2.Qwen2VLVisionRotaryEmbedding, cfg_qwen2.Qwen2VLVisionConfig),
               (hf_qwen25.Qwen2_5_VLVisionRotaryEmbedding, cfg_qwen25.Qwen2_5_VLVisionConfig),
               (hf_qwen3.Qwen3VLVisionRotaryEmbedding, cfg_qwen3.Qwen3VLVisionConfig)]


@pytest.mark.parametrize("rotary_cls,config_cls", QWEN_VISION, ids=["qwen2_vl", "qwen2_5_vl", "qwen3_vl"])
def test_qwen_vision_frequencies_and_tables_match_transformers(rotary_cls, config_cls):
    extra = {"out_hidden_size": 32} if config_cls is not cfg_qwen2.Qwen2VLVisionConfig else {}
    rotary = rotary_cls(_qwen_vision_config(config_cls, **extra))
    freq, axis = axial_rope_frequencies(16, base=100.0, style="qwen2_vl")
    positions = patch_positions(4, 6, merge_size=2)
    cos, sin = rotary(torch.zeros(1), positions.T)
    mine = multiaxis_cos_sin(positions, freq, axis)
    torch.testing.assert_close(_full(mine[0]), cos, atol=ATOL, rtol=0)
    torch.testing.assert_close(_full(mine[1]), sin, atol=ATOL, rtol=0)


def test_qwen2_vl_vision_tower_orders_patches_in_merge_blocks_and_rotates_like_apply_axial_rope():
    torch.manual_seed(1)
    model = hf_qwen2.Qwen2VisionTransformerPretrainedModel(_qwen_vision_config(cfg_qwen2.Qwen2VLVisionConfig)).eval()
    calls = _capture(model.rotary_pos_emb)
    frames, height, width = 2, 4, 6                                          # a video: 2 temporal patches
    with torch.no_grad():
        model(torch.randn(frames * height * width, 3 * 2 * 2 * 2), grid_thw=torch.tensor([[frames, height, width]]))
    (_, hf_positions), (cos, sin) = calls[0]
    positions = patch_positions(height, width, merge_size=2, frames=frames)
    assert torch.equal(hf_positions.T, positions)
    assert not torch.equal(positions, patch_positions(height, width, frames=frames))  # not row-major
    q, k = torch.randn(2, frames * height * width, 4, 16)                    # transformers' (seq, heads, dim)
    hf_q, hf_k = hf_qwen2.apply_rotary_pos_emb_vision(q, k, cos, sin)
    mine_q = apply_axial_rope(q.transpose(0, 1), positions, base=100.0, style="qwen2_vl").transpose(0, 1)
    mine_k = apply_axial_rope(k.transpose(0, 1), positions, base=100.0, style="qwen2_vl").transpose(0, 1)
    torch.testing.assert_close(mine_q, hf_q, atol=ATOL, rtol=0)
    torch.testing.assert_close(mine_k, hf_k, atol=ATOL, rtol=0)


def test_the_two_styles_share_the_row_frequencies_and_differ_in_the_columns():
    pixtral, axis = axial_rope_frequencies(32, style="pixtral")
    qwen, axis_qwen = axial_rope_frequencies(32, style="qwen2_vl")
    assert torch.equal(axis, axis_qwen) and axis.tolist() == [0] * 8 + [1] * 8
    torch.testing.assert_close(pixtral[:8], qwen[:8], rtol=1e-15, atol=0)    # rows: base ** (-4j/d) in both
    torch.testing.assert_close(pixtral[8:], qwen[8:] * 10000.0 ** (-2 / 32), rtol=1e-14, atol=0)  # half a step
    assert len(set(pixtral.tolist())) == 16 and len(set(qwen.tolist())) == 8  # Pixtral uses no frequency twice


# ============================================================================ M-RoPE vs transformers
def _text_config(config_cls, head_dim, section, base=10000.0):
    return config_cls(hidden_size=2 * head_dim, num_attention_heads=2, num_key_value_heads=2, head_dim=head_dim,
                      num_hidden_layers=1, intermediate_size=32, vocab_size=64,
                      rope_parameters={"rope_type": "default", "rope_theta": base, "mrope_section": list(section)})


MROPE_CASES = [  # (rotary class, config class, head_dim, section, interleaved)
    (hf_qwen2.Qwen2VLRotaryEmbedding, cfg_qwen2.Qwen2VLTextConfig, 16, (2, 3, 3), False),
    (hf_qwen2.Qwen2VLRotaryEmbedding, cfg_qwen2.Qwen2VLTextConfig, 128, (16, 24, 24), False),
    (hf_qwen25.Qwen2_5_VLRotaryEmbedding, cfg_qwen25.Qwen2_5_VLTextConfig, 128, (16, 24, 24), False),
    (hf_qwen3.Qwen3VLTextRotaryEmbedding, cfg_qwen3.Qwen3VLTextConfig, 16, (4, 2, 2), True),
    (hf_qwen3.Qwen3VLTextRotaryEmbedding, cfg_qwen3.Qwen3VLTextConfig, 128, (24, 20, 20), True),
]


@pytest.mark.parametrize("rotary_cls,config_cls,head_dim,section,interleaved", MROPE_CASES,
                         ids=["qwen2_vl-16", "qwen2_vl-128", "qwen2_5_vl-128", "qwen3_vl-16", "qwen3_vl-128"])
def test_mrope_tables_and_rotation_match_transformers(rotary_cls, config_cls, head_dim, section, interleaved):
    torch.manual_seed(2)
    rotary = rotary_cls(_text_config(config_cls, head_dim, section))
    positions = torch.randint(0, 64, (3, 2, 11))                              # (3, batch, seq): t, h, w
    cos, sin = rotary(torch.zeros(1, dtype=torch.float32), positions)        # (batch, seq, head_dim)
    theta, _ = rope_inv_freq(head_dim)
    axis = mrope_axes(section, interleaved=interleaved)
    mine = multiaxis_cos_sin(positions, theta, axis)
    torch.testing.assert_close(_full(mine[0]), cos, atol=ATOL, rtol=0)
    torch.testing.assert_close(_full(mine[1]), sin, atol=ATOL, rtol=0)
    q, k = torch.randn(2, 2, 3, 11, head_dim)                               # (batch, heads, seq, head_dim)
    hf_q, hf_k = hf_qwen2.apply_rotary_pos_emb(q, k, cos, sin)
    torch.testing.assert_close(apply_mrope(q, positions, mrope_section=section, interleaved=interleaved), hf_q,
                               atol=ATOL, rtol=0)
    torch.testing.assert_close(apply_mrope(k, positions, mrope_section=section, interleaved=interleaved), hf_k,
                               atol=ATOL, rtol=0)


def test_older_transformers_form_with_the_section_repeated_is_the_same():
    """Older transformers versions applied M-RoPE in apply_multimodal_rotary_pos_emb: the full-width table [c, c]
    of each axis split by mrope_section * 2 (the list repeated), piece j taken from axis j % 3. Same tables."""
    positions = torch.randint(0, 50, (3, 1, 7))
    theta, _ = rope_inv_freq(16)
    full = torch.cat([positions[..., None] * theta] * 2, dim=-1)              # (3, 1, 7, 16): each axis's angles
    old = torch.cat([piece[j % 3] for j, piece in enumerate(full.split([2, 3, 3] * 2, dim=-1))], dim=-1)
    mine = _full(multiaxis_cos_sin(positions, theta, mrope_axes([2, 3, 3]), dtype=torch.float64)[0])
    torch.testing.assert_close(mine, old.cos(), rtol=0, atol=1e-12)


def test_mrope_axes_layouts():
    assert mrope_axes([2, 3, 3]).tolist() == [0, 0, 1, 1, 1, 2, 2, 2]
    inter = mrope_axes([24, 20, 20], interleaved=True)
    assert inter[:6].tolist() == [0, 1, 2, 0, 1, 2] and inter[-7:].tolist() == [0, 1, 2, 0, 0, 0, 0]
    for section in ([16, 24, 24], [24, 20, 20], [4, 2, 2]):
        for interleaved in (False, True):
            if interleaved and section == [16, 24, 24]:
                continue  # 3 * 24 > 64: cannot be interleaved (tested below)
            counts = torch.bincount(mrope_axes(section, interleaved=interleaved), minlength=3).tolist()
            assert counts == section


def test_presets_are_transformers_defaults():
    """The head_dim, sections and bases the notebook quotes are transformers' default Qwen-VL text configs."""
    for name, config_cls, rotary_cls in [("qwen2_vl", cfg_qwen2.Qwen2VLTextConfig, hf_qwen2.Qwen2VLRotaryEmbedding),
                                         ("qwen2_5_vl", cfg_qwen25.Qwen2_5_VLTextConfig,
                                          hf_qwen25.Qwen2_5_VLRotaryEmbedding),
                                         ("qwen3_vl", cfg_qwen3.Qwen3VLTextConfig,
                                          hf_qwen3.Qwen3VLTextRotaryEmbedding)]:
        config = config_cls()
        preset = MROPE_PRESETS[name]
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        assert head_dim == preset["head_dim"], name
        assert config.rope_parameters["rope_theta"] == preset["base"], name
        assert tuple(rotary_cls(config).mrope_section) == preset["mrope_section"], name
        assert sum(preset["mrope_section"]) == head_dim // 2
    assert MROPE_PRESETS["qwen3_vl"]["interleaved"] and not MROPE_PRESETS["qwen2_vl"]["interleaved"]


# ============================================================================ position ids vs get_rope_index
def _vl_model(model_cls, config_cls, **vision):
    text = dict(hidden_size=32, num_attention_heads=2, num_key_value_heads=2, num_hidden_layers=1, intermediate_size=32,
                vocab_size=64,
                rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]})
    vision = dict(depth=1, embed_dim=32, hidden_size=32, num_heads=2, spatial_merge_size=2, **vision)
    return model_cls(config_cls(text_config=text, vision_config=vision))


def _hf_rope_index(model, segments, **kwargs):
    """transformers' ids (3, seq) for one sequence; checks its rope_deltas = max id + 1 - seq on the way (the
    offset generation adds to plain positions after the prompt)."""
    types_ = mrope_token_types(segments)[None]
    grids = {kind: torch.tensor([list(s[1]) for s in segments if s[0] == kind]) for kind in ("image", "video")}
    ids, deltas = model.get_rope_index(torch.zeros_like(types_), types_,
                                       image_grid_thw=grids["image"] if len(grids["image"]) else None,
                                       video_grid_thw=grids["video"] if len(grids["video"]) else None, **kwargs)
    assert int(deltas) == int(ids.max()) + 1 - types_.shape[1]
    return ids[:, 0]


def _paper_rule(segments, merge=2, tokens_per_second=None):
    """The Qwen2-VL paper's rule, written as Qwen's reference get_rope_index (transformers <= 5.2) loops: each
    modality starts at the maximum id so far + 1; a video's time ids are trunc(k * seconds * tokens_per_second)."""
    out, next_id = [], 0
    for segment in segments:
        if segment[0] == "text":
            out += [[next_id + j] * 3 for j in range(segment[1])]
        else:
            t, h, w = segment[1][0], segment[1][1] // merge, segment[1][2] // merge
            seconds = segment[2] if len(segment) == 3 else 1.0
            for frame in range(t):
                time = frame if tokens_per_second is None or segment[0] == "image" else int(
                    torch.tensor(frame, dtype=torch.float32) * torch.tensor(seconds * tokens_per_second,
                                                                            dtype=torch.float32))
                out += [[next_id + time, next_id + r, next_id + c] for r in range(h) for c in range(w)]
        next_id = max(max(ids) for ids in out) + 1
    return torch.tensor(out).T


MIXED = [("text", 3), ("image", (1, 4, 6)), ("text", 2), ("video", (2, 4, 4)), ("text", 2)]  # the notebook's sequence
LONG_VIDEO = [("text", 2), ("video", (5, 4, 4)), ("text", 3)]                                # time outruns the grid


def test_qwen2_vl_position_ids_match_get_rope_index():
    model = _vl_model(hf_qwen2.Qwen2VLModel, cfg_qwen2.Qwen2VLConfig)
    for segments in (MIXED, [("image", (1, 2, 8)), ("text", 4)], [("text", 1), ("video", (3, 6, 2))]):
        ids = mrope_position_ids(segments)
        assert torch.equal(ids, _hf_rope_index(model, segments))
        assert torch.equal(ids, mrope_position_ids(segments, resume="grid"))  # the two rules agree here
        assert torch.equal(ids, _paper_rule(segments))
    # a video whose time ids outrun max(h', w'): transformers' current rule is "grid", the paper's is "max"
    assert torch.equal(mrope_position_ids(LONG_VIDEO, resume="grid"), _hf_rope_index(model, LONG_VIDEO))
    assert torch.equal(mrope_position_ids(LONG_VIDEO, resume="max"), _paper_rule(LONG_VIDEO))
    after = mrope_position_ids(LONG_VIDEO)[:, -3]                            # first text token after the video
    assert after.tolist() == [7, 7, 7] and mrope_position_ids(LONG_VIDEO, resume="grid")[0, -3] == 4


def test_qwen2_5_vl_time_scaled_position_ids_match_get_rope_index():
    model = _vl_model(hf_qwen25.Qwen2_5_VLModel, cfg_qwen25.Qwen2_5_VLConfig, tokens_per_second=2, out_hidden_size=32)
    segments = [("text", 2), ("video", (3, 4, 4), 0.5), ("text", 1), ("image", (1, 2, 4)), ("text", 1),
                ("video", (2, 2, 2), 1.0 / 3.0), ("text", 2)]
    seconds = torch.tensor([0.5, 1.0 / 3.0])
    for resume in ("grid", "max"):
        ids = mrope_position_ids(segments, tokens_per_second=2, resume=resume)
        if resume == "grid":
            assert torch.equal(ids, _hf_rope_index(model, segments, second_per_grid_ts=seconds))
        else:
            assert torch.equal(ids, _paper_rule(segments, tokens_per_second=2))
    time = mrope_position_ids([("video", (4, 2, 2), 2.0)], tokens_per_second=2)[0]
    assert time.unique().tolist() == [0, 4, 8, 12]                          # 2 s per grid x 2 tokens per second


def test_qwen3_vl_position_ids_match_get_rope_index():
    """Qwen3-VL splits a video into frames with a timestamp (text) before each; each frame is a t = 1 grid."""
    model = _vl_model(hf_qwen3.Qwen3VLModel, cfg_qwen3.Qwen3VLConfig, out_hidden_size=32)
    frames = [("text", 2), ("video", (1, 4, 4)), ("text", 2), ("video", (1, 4, 4)), ("text", 2), ("video", (1, 4, 4))]
    segments = [("text", 3), ("image", (1, 4, 2))] + frames + [("text", 2)]
    types_ = mrope_token_types(segments)[None]
    ids, _ = model.get_rope_index(torch.zeros_like(types_), types_, image_grid_thw=torch.tensor([[1, 4, 2]]),
                                  video_grid_thw=torch.tensor([[3, 4, 4]]))
    assert torch.equal(mrope_position_ids(segments), ids[:, 0])


def test_text_tokens_and_token_counts():
    ids = mrope_position_ids(MIXED)
    types_ = mrope_token_types(MIXED)
    assert ids.shape == (3, types_.numel()) == (3, 3 + 6 + 2 + 8 + 2)
    text = types_ == 0
    assert torch.equal(ids[0, text], ids[1, text]) and torch.equal(ids[1, text], ids[2, text])
    assert ids[:, -1].tolist() == [11, 11, 11]   # 21 tokens, ids 0 .. 11: the image (6 tokens) adds 3, the video (8) 2
    image = ids[:, types_ == 1]
    assert image[0].unique().tolist() == [3] and image[1].unique().tolist() == [3, 4]
    assert image[2].unique().tolist() == [3, 4, 5]


# ============================================================================ properties
@pytest.mark.parametrize("style", ["pixtral", "qwen2_vl"])
def test_axial_score_depends_on_row_and_column_differences_only(style):
    torch.manual_seed(3)
    q, k = torch.randn(2, 1, 12, 16, dtype=torch.float64)
    rows, cols = torch.randint(0, 20, (2, 12))
    positions = torch.stack((rows, cols))
    base = _scores(apply_axial_rope(q, positions, style=style), apply_axial_rope(k, positions, style=style))
    for shift in ([3, 0], [0, 5], [7, 11]):
        moved = positions + torch.tensor(shift)[:, None]
        torch.testing.assert_close(_scores(apply_axial_rope(q, moved, style=style),
                                           apply_axial_rope(k, moved, style=style)), base, rtol=0, atol=1e-12)
    swapped = positions.flip(0)                                              # rows and columns exchanged
    assert (_scores(apply_axial_rope(q, swapped, style=style), apply_axial_rope(k, swapped, style=style))
            - base).abs().max() > 1e-3


def test_mrope_score_depends_on_coordinate_differences_and_text_is_plain_rope():
    torch.manual_seed(4)
    q, k = torch.randn(2, 2, 3, 9, 16, dtype=torch.float64)
    positions = torch.randint(0, 50, (3, 2, 9))
    for interleaved, section in ((False, (2, 3, 3)), (True, (4, 2, 2))):
        def score(p, section=section, interleaved=interleaved):  # this iteration's layout
            return _scores(apply_mrope(q, p, mrope_section=section, interleaved=interleaved),
                           apply_mrope(k, p, mrope_section=section, interleaved=interleaved))
        torch.testing.assert_close(score(positions + torch.tensor([5, -2, 9])[:, None, None]), score(positions),
                                   rtol=0, atol=1e-12)
        text = torch.arange(9).expand(3, 2, 9) + 40                          # t = h = w
        torch.testing.assert_close(apply_mrope(q, text, mrope_section=section, interleaved=interleaved),
                                   apply_rope(q, torch.arange(9) + 40), rtol=0, atol=1e-12)


def test_interleaved_layout_is_the_half_layout_permuted():
    torch.manual_seed(5)
    x = torch.randn(7, 16, dtype=torch.float64)
    positions = torch.randint(0, 30, (2, 7))
    perm = layout_permutation(16)
    torch.testing.assert_close(apply_axial_rope(x, positions, layout="interleaved")[:, perm],
                               apply_axial_rope(x[:, perm], positions, layout="half"), rtol=0, atol=1e-12)


def test_batched_positions_attention_factor_and_inv_freq():
    torch.manual_seed(6)
    x = torch.randn(2, 3, 5, 8)
    positions = torch.randint(0, 40, (3, 2, 5))
    inv_freq = torch.rand(4, dtype=torch.float64)
    out = apply_mrope(x, positions, mrope_section=[1, 2, 1], inv_freq=inv_freq, attention_factor=1.5)
    for b in range(2):
        one = apply_mrope(x[b], positions[:, b], mrope_section=[1, 2, 1], inv_freq=inv_freq, attention_factor=1.5)
        torch.testing.assert_close(out[b], one, rtol=0, atol=1e-6)
    torch.testing.assert_close(out.norm(dim=-1), 1.5 * x.norm(dim=-1), rtol=1e-5, atol=0)
    same = apply_mrope(x, positions[:, :1], mrope_section=[1, 2, 1])        # batch 1 broadcasts
    torch.testing.assert_close(same[1], apply_mrope(x[1], positions[:, 0], mrope_section=[1, 2, 1]))


def test_rotary_dims_turn_one_slice_and_copy_the_rest():
    """rotary_dims=(start, stop): the slice turns exactly as the slice alone would, the other dims are copied
    (a checkpoint's partial M-RoPE, e.g. GLM-4.1V's first 64 of 128 dims); x's dim may be odd."""
    torch.manual_seed(7)
    x = torch.randn(2, 3, 5, 13, dtype=torch.float64)
    positions = torch.randint(0, 40, (3, 2, 5))
    inv_freq, axis = torch.rand(4, dtype=torch.float64), mrope_axes([1, 2, 1])
    for start in (0, 3, 5):
        stop = start + 8
        out = apply_multiaxis_rope(x, positions, inv_freq=inv_freq, axis_of_pair=axis, attention_factor=1.5,
                                   layout="interleaved", rotary_dims=(start, stop))
        alone = apply_multiaxis_rope(x[..., start:stop], positions, inv_freq=inv_freq, axis_of_pair=axis,
                                     attention_factor=1.5, layout="interleaved")
        assert torch.equal(out[..., start:stop], alone)
        assert torch.equal(out[..., :start], x[..., :start]) and torch.equal(out[..., stop:], x[..., stop:])


def test_input_is_not_modified_and_dtype_is_kept():
    x = torch.randn(1, 2, 6, 16, dtype=torch.bfloat16)
    before = x.clone()
    positions = patch_positions(2, 3)
    out = apply_axial_rope(x, positions)
    assert torch.equal(x, before) and out.dtype == torch.bfloat16 and out.shape == x.shape
    exact = apply_axial_rope(x.double(), positions)
    assert (out.double() - exact).abs().max() <= (exact.to(torch.bfloat16).double() - exact).abs().max() * 2 + 1e-6


def test_patch_positions_order():
    assert patch_positions(2, 3).tolist() == [[0, 0, 0, 1, 1, 1], [0, 1, 2, 0, 1, 2]]
    merged = patch_positions(2, 4, merge_size=2)
    assert merged.tolist() == [[0, 0, 1, 1, 0, 0, 1, 1], [0, 1, 0, 1, 2, 3, 2, 3]]
    assert patch_positions(2, 2, frames=3).shape == (2, 12)


def test_every_function_runs_on_the_callers_device(device):
    x = torch.randn(1, 2, 8, 16, device=device)
    positions = patch_positions(2, 4, merge_size=2, device=device)
    device = x.device  # torch.device("cuda") as a tensor has it: cuda:0
    assert positions.device == device
    for out in (apply_axial_rope(x, positions), apply_axial_rope(x, positions, style="qwen2_vl"),
                apply_mrope(x, mrope_position_ids([("text", 2), ("image", (1, 2, 12))], device=device),
                            mrope_section=[4, 2, 2], interleaved=True),
                *axial_rope_frequencies(16, device=device), mrope_axes([2, 3, 3], device=device),
                mrope_token_types([("text", 1)], device=device),
                *multiaxis_cos_sin(positions, *axial_rope_frequencies(16, device=device))):
        assert out.device == device
    if not is_meta(x):
        ids = mrope_position_ids(MIXED, device=device)
        assert torch.equal(ids.cpu(), mrope_position_ids(MIXED))


# ============================================================================ bad input
X = torch.randn(1, 2, 6, 16)
P2 = patch_positions(2, 3)
P3 = torch.zeros(3, 6, dtype=LONG)
FREQ, AXIS = axial_rope_frequencies(16)

BAD = [  # (id, call, exception, pattern the message must match)
    ("patch height 0", lambda: patch_positions(0, 3), ValueError, r"height must be >= 1"),
    ("patch width float", lambda: patch_positions(2, 3.0), TypeError, r"width must be an int"),
    ("patch merge does not divide", lambda: patch_positions(3, 4, merge_size=2), ValueError,
     r"multiples of merge_size=2"),
    ("patch frames 0", lambda: patch_positions(2, 2, frames=0), ValueError, r"frames must be >= 1"),
    ("axial dim not multiple of 4", lambda: axial_rope_frequencies(6), ValueError, r"dim must be a multiple of 4"),
    ("axial dim odd", lambda: axial_rope_frequencies(7), ValueError, r"dim must be even"),
    ("axial style", lambda: axial_rope_frequencies(16, style="eva"), ValueError, r"style must be one of"),
    ("axial base", lambda: axial_rope_frequencies(16, base=0.5), ValueError, r"base must be > 1.0"),
    ("axial x int", lambda: apply_axial_rope(torch.ones(6, 16, dtype=LONG), P2), TypeError,
     r"x must be a floating-point tensor"),
    ("axial x 1-D", lambda: apply_axial_rope(torch.randn(16), P2), ValueError, r"x must have shape \(..., seq, dim\)"),
    ("axial positions 3 rows", lambda: apply_axial_rope(X, P3), ValueError, r"positions must have shape \(2, seq\)"),
    ("axial positions float", lambda: apply_axial_rope(X, P2.float()), TypeError, r"positions must be an integer"),
    ("axial positions list", lambda: apply_axial_rope(X, P2.tolist()), TypeError, r"positions must be a torch.Tensor"),
    ("axial positions wrong seq", lambda: apply_axial_rope(X, patch_positions(2, 2)), ValueError,
     r"positions must have seq = x's seq = 6"),
    ("axial positions batch", lambda: apply_axial_rope(X, torch.zeros(2, 3, 6, dtype=LONG)), ValueError,
     r"batch dimension that does not fit"),
    ("axial layout", lambda: apply_axial_rope(X, P2, layout="neox"), ValueError, r"layout must be one of"),
    ("mrope section length", lambda: apply_mrope(X, P3, mrope_section=[4, 4]), TypeError,
     r"mrope_section must be a list of three ints"),
    ("mrope section negative", lambda: apply_mrope(X, P3, mrope_section=[-1, 5, 4]), ValueError,
     r"mrope_section\[0\] must be >= 0"),
    ("mrope section float", lambda: apply_mrope(X, P3, mrope_section=[2.0, 3, 3]), TypeError,
     r"mrope_section\[0\] must be an int"),
    ("mrope section sum", lambda: apply_mrope(X, P3, mrope_section=[2, 2, 2]), ValueError,
     r"mrope_section must add up to dim/2 = 8 pairs"),
    ("mrope section zero", lambda: mrope_axes([0, 0, 0]), ValueError, r"at least one pair"),
    ("mrope not interleavable", lambda: mrope_axes([16, 24, 24], interleaved=True), ValueError,
     r"cannot be interleaved.*gives h only 21 of its s_h=24"),
    ("mrope interleaved not bool", lambda: mrope_axes([2, 3, 3], interleaved="yes"), TypeError,
     r"interleaved must be a bool"),
    ("mrope positions 2 rows", lambda: apply_mrope(X, P2, mrope_section=[2, 3, 3]), ValueError,
     r"positions must have shape \(3, seq\)"),
    ("mrope attention_factor", lambda: apply_mrope(X, P3, mrope_section=[2, 3, 3], attention_factor=0.0),
     ValueError, r"attention_factor must be > 0"),
    ("mrope inv_freq shape", lambda: apply_mrope(X, P3, mrope_section=[2, 3, 3], inv_freq=torch.ones(4)),
     ValueError, r"inv_freq must have shape \(dim/2,\) = \(8,\)"),
    ("mrope inv_freq nan", lambda: apply_mrope(X, P3, mrope_section=[2, 3, 3], inv_freq=torch.full((8,), float("nan"))),
     ValueError, r"inv_freq must hold finite numbers"),
    ("multiaxis rotary_dims past the head", lambda: apply_multiaxis_rope(X, P2, inv_freq=FREQ, axis_of_pair=AXIS,
                                                                          rotary_dims=(10, 20)),
     ValueError, r"rotary_dims must be \(start, stop\) with 0 <= start < stop <= 16"),
    ("multiaxis rotary_dims odd width", lambda: apply_multiaxis_rope(X, P2, inv_freq=FREQ, axis_of_pair=AXIS,
                                                                      rotary_dims=(0, 7)),
     ValueError, r"stop - start even"),
    ("multiaxis rotary_dims not a pair", lambda: apply_multiaxis_rope(X, P2, inv_freq=FREQ, axis_of_pair=AXIS,
                                                                       rotary_dims=8), TypeError,
     r"rotary_dims must be a pair of ints"),
    ("multiaxis inv_freq vs rotary_dims", lambda: apply_multiaxis_rope(X, P2, inv_freq=FREQ, axis_of_pair=AXIS,
                                                                        rotary_dims=(0, 4)),
     ValueError, r"inv_freq must have shape \(\(stop - start\)/2 of rotary_dims,\) = \(2,\)"),
    ("multiaxis axis out of range", lambda: apply_multiaxis_rope(X, P2, inv_freq=FREQ, axis_of_pair=AXIS + 1),
     ValueError, r"axis_of_pair must hold axes 0 .. 1"),
    ("multiaxis axis float", lambda: apply_multiaxis_rope(X, P2, inv_freq=FREQ, axis_of_pair=AXIS.float()),
     TypeError, r"axis_of_pair must be an integer tensor"),
    ("multiaxis axis shape", lambda: apply_multiaxis_rope(X, P2, inv_freq=FREQ, axis_of_pair=AXIS[:4]),
     ValueError, r"axis_of_pair must have inv_freq's shape"),
    ("multiaxis inv_freq list", lambda: apply_multiaxis_rope(X, P2, inv_freq=FREQ.tolist(), axis_of_pair=AXIS),
     TypeError, r"inv_freq must be a torch.Tensor"),
    ("multiaxis positions 1-D", lambda: apply_multiaxis_rope(X, torch.arange(6), inv_freq=FREQ, axis_of_pair=AXIS),
     ValueError, r"positions must have shape \(axes, seq\)"),
    ("multiaxis positions huge", lambda: apply_multiaxis_rope(X, P2 + 2 ** 60, inv_freq=FREQ, axis_of_pair=AXIS),
     ValueError, r"positions must lie within"),
    ("cos_sin dtype int", lambda: multiaxis_cos_sin(P2, FREQ, AXIS, dtype=LONG), TypeError,
     r"dtype must be a floating-point dtype"),
    ("cos_sin positions 0-d", lambda: multiaxis_cos_sin(torch.tensor(3), FREQ, AXIS), ValueError,
     r"positions must have one row per axis"),
    ("segments empty", lambda: mrope_position_ids([]), TypeError, r"segments must be a non-empty list"),
    ("segments kind", lambda: mrope_position_ids([("audio", 3)]), ValueError, r"segments\[0\]\[0\] must be one of"),
    ("segments text count", lambda: mrope_position_ids([("text", 0)]), ValueError, r"segments\[0\]\[1\] must be >= 1"),
    ("segments grid", lambda: mrope_position_ids([("text", 1), ("image", (4, 4))]), TypeError,
     r"segments\[1\]\[1\] must be the grid \(t, h, w\)"),
    ("segments merge", lambda: mrope_position_ids([("image", (1, 3, 4))]), ValueError,
     r"segments\[0\]: h and w must be multiples of spatial_merge_size=2"),
    ("segments image seconds", lambda: mrope_position_ids([("image", (1, 2, 2), 1.0)]), TypeError,
     r"only a video has seconds per grid"),
    ("segments seconds without tokens_per_second", lambda: mrope_position_ids([("video", (2, 2, 2), 0.5)]),
     ValueError, r"tokens_per_second is None"),
    ("segments seconds negative", lambda: mrope_position_ids([("video", (2, 2, 2), -1.0)], tokens_per_second=2),
     ValueError, r"segments\[0\]\[2\] must be > 0"),
    ("segments not a tuple", lambda: mrope_position_ids(["text"]), TypeError, r"segments\[0\] must be"),
    ("resume", lambda: mrope_position_ids([("text", 1)], resume="next"), ValueError, r"resume must be one of"),
    ("tokens_per_second", lambda: mrope_position_ids([("text", 1)], tokens_per_second=0), ValueError,
     r"tokens_per_second must be > 0"),
    ("spatial_merge_size", lambda: mrope_token_types([("text", 1)], spatial_merge_size=0), ValueError,
     r"spatial_merge_size must be >= 1"),
]


@pytest.mark.parametrize("call,exc,pattern", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_input_is_named(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


def test_mixed_devices_are_named():
    meta = torch.device("meta")
    with pytest.raises(ValueError, match=r"positions must be on x's device"):
        apply_axial_rope(X, P2.to(meta))
    with pytest.raises(ValueError, match=r"inv_freq must be on x's device"):
        apply_mrope(X, P3, mrope_section=[2, 3, 3], inv_freq=torch.ones(8, device=meta))
    with pytest.raises(ValueError, match=r"axis_of_pair must be on inv_freq's device"):
        apply_multiaxis_rope(X, P2, inv_freq=FREQ, axis_of_pair=AXIS.to(meta))
    with pytest.raises(ValueError, match=r"inv_freq must be on positions' device"):
        multiaxis_cos_sin(P2, FREQ.to(meta), AXIS)



def test_qwen3_vl_vision_adds_an_interpolated_absolute_table_before_its_2d_rope():
    """Notebook 11: Qwen3-VL's vision encoder is not RoPE alone: it adds a learned absolute table (pos_embed,
    num_position_embeddings rows of a fixed grid, interpolated to the image's grid) to the patch embeddings,
    and turns q and k with its 2-D RoPE inside attention. Read from what the model does: zeroing the table
    changes the output, and the table has the grid's rows."""
    torch.manual_seed(0)
    config = cfg_qwen3.Qwen3VLVisionConfig(depth=1, hidden_size=32, intermediate_size=32, num_heads=2,
                                           out_hidden_size=32, patch_size=4, temporal_patch_size=2,
                                           spatial_merge_size=2, num_position_embeddings=16,
                                           deepstack_visual_indexes=[], in_channels=3)
    model = hf_qwen3.Qwen3VLVisionModel(config).eval()
    grid, patches = torch.tensor([[1, 4, 6]]), torch.randn(24, 3 * 2 * 4 * 4)

    def run():
        with torch.no_grad():
            out = model(patches, grid_thw=grid)
        return out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]

    with_table = run()
    assert model.pos_embed.num_embeddings == config.num_position_embeddings == 16
    with torch.no_grad():
        model.pos_embed.weight.zero_()
    assert (run() - with_table).abs().max() > 1e-3  # the absolute table is part of the encoder's input
