"""posenc_lib.inference's serving block (notebook 13): context shift, the ring buffer, tree decoding, a cached
chunk moved to another offset, the usable length a config states, RoBERTa's positions under packing.

Against transformers on tiny randomly initialised models built from a config (no download): a Llama for the
shift, the moved chunk and the token tree (posenc_lib's cache and rotation with the Llama's weights through
`llama_decode_step`, and the Llama's own forward with a 4-D tree mask); a Mistral's DynamicSlidingWindowLayer
for the ring buffer; transformers' sliding-window mask function; its RoPE initialisation for the lengths a
config's scaling starts from; RoBERTa's create_position_ids_from_input_ids. Bad inputs: one table at the end."""
import pytest
import torch

from posenc_lib import ALiBi, apply_rope
from posenc_lib.experiments.results import load_model_configs
from posenc_lib.inference import (
    CacheEntry,
    KVCache,
    RingBufferCache,
    context_shift,
    llama_decode_step,
    packed_position_ids,
    rerotate_keys,
    token_tree,
    tree_mask,
    tree_positions,
    usable_context_length,
    window_mask_bias,
)

transformers = pytest.importorskip("transformers")
transformers.logging.set_verbosity_error()


def _llama(num_layers, seed=6):
    config = transformers.LlamaConfig(vocab_size=50, hidden_size=32, intermediate_size=64, num_hidden_layers=num_layers,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                      initializer_range=0.2, pad_token_id=0, eos_token_id=None)
    torch.manual_seed(seed)
    return transformers.LlamaForCausalLM(config).eval()


IDS = torch.randint(1, 50, (1, 13), generator=torch.Generator().manual_seed(7))


def _gap(a, b) -> float:
    return float((a - b).abs().max())


# ------------------------------------------------------------------ re-rotating cached keys
@pytest.mark.parametrize("dtype, atol", [(torch.float64, 1e-12), (torch.float32, 1e-5)])
@pytest.mark.parametrize("offset", [-8, 5, 0])
def test_rerotating_equals_rotating_from_scratch(dtype, atol, offset):
    raw = torch.randn(2, 3, 20, 16, generator=torch.Generator().manual_seed(0), dtype=dtype)
    cached = apply_rope(raw, torch.arange(20, 40))
    before = cached.clone()
    moved = rerotate_keys(cached, offset)
    torch.testing.assert_close(moved, apply_rope(raw, torch.arange(20, 40) + offset), atol=atol, rtol=0)
    assert moved.dtype == dtype and torch.equal(cached, before)                      # a new tensor
    assert _gap(rerotate_keys(moved, -offset - 3), apply_rope(raw, torch.arange(17, 37))) < atol   # composes


def test_rerotating_bf16_keys_costs_one_rounding_and_a_wrong_sign_is_far_off():
    raw = torch.randn(1, 2, 32, 16, generator=torch.Generator().manual_seed(0))
    cached = apply_rope(raw.bfloat16(), torch.arange(32))
    scratch = apply_rope(raw.bfloat16(), torch.arange(32) - 8)
    ulp = 2.0 ** -7 * float(raw.abs().max())                                         # bf16: 8 significant bits
    assert _gap(rerotate_keys(cached, -8).float(), scratch.float()) <= ulp
    assert _gap(rerotate_keys(cached, +8).float(), scratch.float()) > 0.5


def test_rerotating_takes_the_frequencies_and_layout_the_keys_were_turned_with():
    raw = torch.randn(4, 12, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    inv_freq = torch.tensor([1.0, 0.3, 0.05, 0.01, 0.002, 0.0001], dtype=torch.float64)
    for layout in ("half", "interleaved"):
        cached = apply_rope(raw, torch.arange(4), inv_freq=inv_freq, layout=layout)
        want = apply_rope(raw, torch.arange(4) + 7, inv_freq=inv_freq, layout=layout)
        assert _gap(rerotate_keys(cached, 7, inv_freq=inv_freq, layout=layout), want) < 1e-12


# ------------------------------------------------------------------ context shift (llama.cpp), a Llama
def _shift_then_step(num_layers, n_keep=2, n_discard=4):
    """The next token's logits after shifting a 12-token cache, and after re-prefilling the kept text."""
    model = _llama(num_layers)
    with torch.no_grad():
        cache = KVCache(num_layers)
        llama_decode_step(model, IDS[:, :12], cache, torch.arange(12))
        shifted = context_shift(cache, n_discard, n_keep=n_keep)
        after = 12 - n_discard
        step = llama_decode_step(model, IDS[:, 12:], shifted, torch.tensor([after]))[0, -1]
        kept = torch.cat((IDS[:, :n_keep], IDS[:, n_keep + n_discard:12], IDS[:, 12:]), 1)
        again = model(kept).logits[0, -1]
    return step, again, cache, shifted


def test_context_shift_keeps_n_keep_drops_n_discard_and_renumbers_the_rest():
    _, _, cache, shifted = _shift_then_step(1)
    assert shifted.layers[0].positions[0].tolist() == list(range(8)) + [8]           # 8 kept, then the next token
    assert len(cache) == 12 and cache.layers[0].positions[0].tolist() == list(range(12))  # the given cache: unchanged
    torch.testing.assert_close(shifted.layers[0].valid, torch.ones(1, 9, dtype=torch.bool))


def test_context_shift_is_exact_for_one_layer():
    step, again, _, _ = _shift_then_step(1)
    assert _gap(step, again) < 1e-5


@pytest.mark.parametrize("num_layers", [2, 4])
def test_context_shift_is_not_a_re_prefill_for_a_stack(num_layers):
    """The kept tokens' hidden states were computed with the dropped ones in their context."""
    step, again, _, _ = _shift_then_step(num_layers)
    assert _gap(step, again) > 1e-2


def test_alibi_needs_no_rerotation_its_bias_reads_distances_only():
    alibi, q = ALiBi(4), torch.zeros(1, 4, 1, 8)
    before = alibi(q, torch.tensor([11]), torch.tensor([0, 1, 6, 7, 8, 9, 10, 11]))
    after = alibi(q, torch.tensor([7]), torch.tensor([0, 1, 2, 3, 4, 5, 6, 7]))     # kept tokens renumbered
    moved = slice(2, None)                                                           # the keys that moved
    torch.testing.assert_close(before[..., moved], after[..., moved], atol=0, rtol=0)


# ------------------------------------------------------------------ the ring buffer against a Mistral
def _mistral(window):
    config = transformers.MistralConfig(vocab_size=50, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                        sliding_window=window, initializer_range=0.2, pad_token_id=0)
    torch.manual_seed(0)
    return transformers.MistralForCausalLM(config).eval()


@pytest.mark.parametrize("prompt", [3, 4, 7], ids=["shorter than W", "equal to W", "longer than W"])
def test_ring_buffer_returns_the_keys_transformers_sliding_window_cache_returns(prompt):
    """What transformers' attention receives from its DynamicSlidingWindowLayer (the keys and values it returned,
    the new ones last, and how many it keeps) is recorded by an attention function registered through
    transformers.AttentionInterface; the ring buffer gets the same new keys and values and must return the same
    tensors, at the positions transformers' sliding-window mask lets each query see."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward
    from transformers.masking_utils import sliding_window_causal_mask_function
    W, recorded = 4, []
    model, ids = _mistral(W), torch.randint(1, 50, (1, prompt + 5), generator=torch.Generator().manual_seed(prompt))
    hf_cache = transformers.DynamicCache(config=model.config)

    def recording(module, query, key, value, attention_mask, **kwargs):
        new = query.shape[-2]
        kept = hf_cache.layers[module.layer_idx].keys.shape[-2]
        recorded.append((key[..., -new:, :], value[..., -new:, :], key, value, kept))
        return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)

    transformers.AttentionInterface.register("posenc_ring_probe", recording)
    model.set_attn_implementation("posenc_ring_probe")
    with torch.no_grad():
        model(ids[:, :prompt], cache=hf_cache, use_cache=True)
        for t in range(prompt, prompt + 5):
            model(ids[:, t:t + 1], cache=hf_cache, use_cache=True)
    assert len(recorded) == 2 * 6
    assert all(type(layer).__name__ == "DynamicSlidingWindowLayer" for layer in hf_cache.layers)
    ring, start, allowed = RingBufferCache(2, window=W), 0, sliding_window_causal_mask_function(W)
    for i, (k, v, their_keys, their_values, kept) in enumerate(recorded):
        layer, T = i % 2, k.shape[-2]
        got = ring.update(layer, k, v, torch.arange(start, start + T))
        assert torch.equal(got.keys, their_keys) and torch.equal(got.values, their_values)
        mine = window_mask_bias(got.query_positions, got.key_positions, W) == 0
        zero = torch.tensor(0)
        theirs = torch.tensor([[bool(allowed(zero, zero, q, kp)) for kp in got.key_positions[0]]
                               for q in got.query_positions[0]])
        assert torch.equal(mine[0, 0], theirs)
        assert kept == min(start + T, W - 1) and ring.layers[layer].keys.shape[-2] == min(start + T, W)   # W - 1 vs W
        start += T if layer == 1 else 0
    slots = ring.slot_positions()[0]
    assert sorted(slots.tolist()) == list(range(start - W, start)) and all(int(p) % W == s for s, p in enumerate(slots))


def test_ring_buffer_keys_carry_text_positions_not_slots():
    """Rotating a ring's key at its slot instead of its text position gives other scores."""
    raw = torch.randn(1, 1, 10, 8, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    ring = RingBufferCache(1, window=4)
    for t in range(10):
        got = ring.update(0, apply_rope(raw[..., t:t + 1, :], torch.tensor([t])), raw[..., t:t + 1, :],
                          torch.tensor([t]))
    assert got.key_positions[0].tolist() == [6, 7, 8, 9]
    q = apply_rope(raw[..., 9:, :], torch.tensor([9]))
    by_text = q @ got.keys.transpose(-1, -2)
    one_pass = q @ apply_rope(raw[..., 6:, :], torch.arange(6, 10)).transpose(-1, -2)
    by_slot = q @ apply_rope(raw[..., 6:, :], torch.arange(6, 10) % 4).transpose(-1, -2)
    assert _gap(by_text, one_pass) < 1e-12 and _gap(by_slot, one_pass) > 1e-2


# ------------------------------------------------------------------ tree decoding, a Llama with a 4-D mask
def _tree_forward(model, prefix, tokens, parents, positions, mask):
    bias = torch.zeros(mask.shape).masked_fill(~mask, float("-inf"))[None, None]
    return model(torch.cat((prefix, tokens), 1), attention_mask=bias, position_ids=positions[None]).logits[0]


def test_tree_forward_equals_each_path_decoded_alone_and_flattened_positions_do_not():
    model, parents, P = _llama(2), token_tree(2, 3) + [3], 5                       # 8 nodes, 4 levels
    prefix, tokens = IDS[:, :P], torch.randint(1, 50, (1, len(parents)), generator=torch.Generator().manual_seed(9))
    mask = tree_mask(parents, prefix_len=P)
    depth = torch.cat((torch.arange(P), tree_positions(parents, start=P)))
    flat = torch.arange(P + len(parents))
    with torch.no_grad():
        tree = _tree_forward(model, prefix, tokens, parents, depth, mask)[P:]
        flattened = _tree_forward(model, prefix, tokens, parents, flat, mask)[P:]
        siblings = _tree_forward(model, prefix, tokens, parents, depth, torch.ones_like(mask).tril())[P:]
        gaps = {"tree": 0.0, "flattened": 0.0, "siblings": 0.0}
        for node in range(len(parents)):
            path = mask[P + node, P:].nonzero()[:, 0]                                 # root .. node
            alone = model(torch.cat((prefix, tokens[:, path]), 1)).logits[0, -1]
            for name, logits in (("tree", tree), ("flattened", flattened), ("siblings", siblings)):
                gaps[name] = max(gaps[name], _gap(logits[node], alone))
    assert gaps["tree"] < 1e-5 and gaps["flattened"] > 1e-2 and gaps["siblings"] > 1e-2


def test_tree_positions_and_mask_of_a_small_tree():
    parents = [-1, 0, 0, 1, 2]
    assert tree_positions(parents, start=3).tolist() == [3, 4, 4, 5, 5]
    assert tree_mask(parents).int().tolist() == [[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 0, 1, 0, 0],
                                                 [1, 1, 0, 1, 0], [1, 0, 1, 0, 1]]
    full = tree_mask(parents, prefix_len=2)
    assert full.shape == (7, 7) and bool(full[2:, :2].all()) and not bool(full[0, 1])
    assert token_tree(2, 3) == [-1, 0, 0, 1, 1, 2, 2] and token_tree(1, 3) == [-1, 0, 1]


# ------------------------------------------------------------------ a cached chunk moved to another offset
def _reuse(num_layers, b=4, d=6):
    """(keys of the chunk prefilled alone at 0 and moved to b vs prefilled alone at b, the next token's logits with
    the moved chunk after a prefix vs the whole prompt prefilled)."""
    model = _llama(num_layers)
    prefix, chunk, nxt = IDS[:, :b], IDS[:, b:b + d], IDS[:, b + d:b + d + 1]
    with torch.no_grad():
        at_zero, at_b, cache = KVCache(num_layers), KVCache(num_layers), KVCache(num_layers)
        llama_decode_step(model, chunk, at_zero, torch.arange(d))
        llama_decode_step(model, chunk, at_b, torch.arange(b, b + d))
        llama_decode_step(model, prefix, cache, torch.arange(b))
        moved_gap = 0.0
        for layer, (chunk_entry, alone) in enumerate(zip(at_zero.layers, at_b.layers)):
            moved = rerotate_keys(chunk_entry.keys, b)
            moved_gap = max(moved_gap, _gap(moved, alone.keys))
            held = cache.layers[layer]
            cache.layers[layer] = CacheEntry(torch.cat((held.keys, moved), -2),
                                             torch.cat((held.values, chunk_entry.values), -2),
                                             torch.cat((held.positions, chunk_entry.positions + b), -1),
                                             torch.cat((held.valid, chunk_entry.valid), -1))
        step = llama_decode_step(model, nxt, cache, torch.tensor([b + d]))[0, -1]
        whole = model(torch.cat((prefix, chunk, nxt), 1)).logits[0, -1]
    return moved_gap, _gap(step, whole)


@pytest.mark.parametrize("num_layers", [1, 2])
def test_a_moved_chunk_equals_the_chunk_prefilled_alone_at_its_new_offset(num_layers):
    moved_gap, _ = _reuse(num_layers)
    assert moved_gap < 1e-5


def test_a_moved_chunk_is_exact_for_one_layer_and_misses_the_cross_attention_in_a_stack():
    assert _reuse(1)[1] < 1e-5 and _reuse(2)[1] > 1e-2


# ------------------------------------------------------------------ the usable length of a config
CONFIGS = {m["name"]: m["config"] for m in load_model_configs()}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_usable_length_of_every_real_config(name):
    config, got = CONFIGS[name], usable_context_length(CONFIGS[name])
    text = config.get("text_config", config)
    stated = text.get("max_position_embeddings", text.get("n_positions"))
    assert got.stated == stated
    if got.rope_type == "yarn":
        assert got.usable == int(got.trained * got.factor)
    elif got.rope_type in ("llama3", "longrope", "default", "none") or got.factor == 1.0:
        assert got.usable == stated
    else:
        assert got.usable is None and got.warnings
    if got.usable is not None and got.times_factor > got.usable:
        assert any("double scaling" in w for w in got.warnings)
    else:
        assert not any("double scaling" in w for w in got.warnings)


def test_the_double_scaled_and_the_ambiguous_configs():
    deepseek = usable_context_length(CONFIGS["DeepSeek-V3"])
    gemma3 = usable_context_length(CONFIGS["Gemma 3 4B (instruction-tuned)"])
    assert (deepseek.trained, deepseek.factor, deepseek.usable) == (4096, 40.0, 163840)
    assert deepseek.times_factor == 163840 * 40 and "double scaling" in deepseek.warnings[-1]
    assert gemma3.rope_type == "linear" and gemma3.usable is None and "may be the trained length" in gemma3.warnings[0]
    qwen = {"model_type": "qwen2", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
            "max_position_embeddings": 32768, "rope_theta": 1e6,
            "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}
    read = usable_context_length(qwen)                                  # Qwen's documented way to add YaRN
    assert (read.usable, read.times_factor) == (131072, 131072) and "differs" in read.warnings[0]


def _hf_inv_freq(config, seq_len=None):
    rope = transformers.models.llama.modeling_llama.LlamaRotaryEmbedding(config)
    x = torch.zeros(1, 1, config.hidden_size // config.num_attention_heads)
    cos, _ = rope(x, torch.arange(seq_len or 50)[None])
    return cos[0, -1]                                                   # the angles at the last position


def test_the_trained_length_is_the_one_transformers_scaling_starts_from():
    """YaRN: transformers' frequencies follow original_max_position_embeddings, not max_position_embeddings;
    dynamic NTK: they change only past max_position_embeddings."""
    def llama_config(max_pos, scaling):
        return transformers.LlamaConfig(hidden_size=32, num_attention_heads=2, max_position_embeddings=max_pos,
                                        rope_scaling=scaling)
    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}
    assert usable_context_length(llama_config(256, yarn).to_dict()).trained == 64
    assert torch.equal(_hf_inv_freq(llama_config(256, yarn)), _hf_inv_freq(llama_config(1024, yarn)))
    changed = {**yarn, "original_max_position_embeddings": 2048}        # (128 falls in the same ramp at head_dim 16)
    assert not torch.equal(_hf_inv_freq(llama_config(256, yarn)), _hf_inv_freq(llama_config(256, changed)))
    dynamic = {"rope_type": "dynamic", "factor": 4.0}
    config = llama_config(64, dynamic)
    assert usable_context_length(config.to_dict()).trained == 64
    rope = transformers.models.llama.modeling_llama.LlamaRotaryEmbedding(config)
    x = torch.zeros(1, 1, 16)
    at_l0, past_l0 = rope(x, torch.arange(64)[None])[0][0, 1], rope(x, torch.arange(65)[None])[0][0, 1]
    plain_rope = transformers.models.llama.modeling_llama.LlamaRotaryEmbedding(llama_config(64, None))
    plain = plain_rope(x, torch.arange(2)[None])[0][0, 1]
    assert torch.equal(at_l0, plain) and not torch.equal(past_l0, plain)


# ------------------------------------------------------------------ RoBERTa's positions under packing
def test_roberta_positions_run_on_across_packed_documents_and_restart_when_packed_properly():
    create = transformers.models.roberta.modeling_roberta.RobertaEmbeddings.create_position_ids_from_input_ids
    pad, lengths = 1, [3, 2, 4]
    docs = [torch.randint(3, 50, (1, n), generator=torch.Generator().manual_seed(n)) for n in lengths]
    packed = torch.cat(docs, 1)
    theirs_packed = create(packed, pad)[0]
    assert theirs_packed.tolist() == list(range(pad + 1, pad + 1 + sum(lengths)))   # one long document
    alone = torch.cat([create(doc, pad)[0] for doc in docs])                         # each document by itself
    assert torch.equal(packed_position_ids(lengths) + pad + 1, alone)
    padded = torch.tensor([[pad, pad, 7, 8, 9]])
    assert create(padded, pad)[0].tolist() == [pad, pad, pad + 1, pad + 2, pad + 3]  # pads at padding_idx


# ------------------------------------------------------------------ bad input: error type and the words it says
def _cache(layers=1, tokens=6, padded=False):
    cache = KVCache(layers)
    valid = torch.ones(1, tokens, dtype=torch.bool)
    if padded:
        valid[0, 0] = False
    k = torch.zeros(1, 1, tokens, 4)
    for layer in range(layers):
        cache.layers[layer] = CacheEntry(k, k, torch.arange(tokens)[None], valid)
    return cache


BAD = [  # (call, error type, words the message must contain)
    (lambda: rerotate_keys(torch.zeros(3, 4, dtype=torch.long), 1), TypeError, ["keys", "floating-point"]),
    (lambda: rerotate_keys(torch.zeros(4), 1), ValueError, ["keys", "(..., seq, head_dim)"]),
    (lambda: rerotate_keys(torch.zeros(2, 4), 1.5), TypeError, ["offset", "int"]),
    (lambda: rerotate_keys(torch.zeros(2, 4), 2 ** 60), ValueError, ["offset", "2**53"]),
    (lambda: rerotate_keys(torch.zeros(2, 4), 1, layout="pairs"), ValueError, ["layout"]),
    (lambda: context_shift("cache", 2), TypeError, ["cache", "KVCache(rotated=True)"]),
    (lambda: context_shift(KVCache(1, rotated=False), 2), TypeError, ["rotated=False"]),
    (lambda: context_shift(RingBufferCache(1, window=4), 2), TypeError, ["RingBufferCache"]),
    (lambda: context_shift(_cache(), 0), ValueError, ["n_discard", ">= 1"]),
    (lambda: context_shift(_cache(), 2, n_keep=-1), ValueError, ["n_keep", ">= 0"]),
    (lambda: context_shift(_cache(), 4, n_keep=3), ValueError, ["n_keep + n_discard", "6 cached tokens"]),
    (lambda: context_shift(_cache(padded=True), 2), ValueError, ["without padding"]),
    (lambda: RingBufferCache(1, window=0), ValueError, ["window", ">= 1"]),
    (lambda: RingBufferCache(1, window=4).update(0, torch.zeros(1, 1, 2, 4), torch.zeros(1, 1, 2, 4),
                                                 torch.arange(2)[None]), ValueError, ["positions", "(seq,)"]),
    (lambda: RingBufferCache(1, window=4).update(0, torch.zeros(1, 1, 2, 4), torch.zeros(1, 1, 2, 4), [0, 1]),
     TypeError, ["positions", "torch.Tensor"]),
    (lambda: RingBufferCache(1, window=4).update(0, torch.zeros(1, 1, 2, 4), torch.zeros(1, 1, 2, 4),
                                                 torch.arange(2), valid=torch.ones(1, 2)), ValueError, ["no padding"]),
    (lambda: window_mask_bias(torch.arange(3)[None], torch.arange(3)[None], 0), ValueError, ["window", ">= 1"]),
    (lambda: window_mask_bias(torch.arange(3), torch.arange(3)[None], 2), ValueError, ["(batch, Tq)"]),
    (lambda: window_mask_bias(torch.zeros(1, 3), torch.arange(3)[None], 2), TypeError, ["query_positions", "integer"]),
    (lambda: window_mask_bias(torch.arange(3)[None], torch.arange(3)[None], 2, torch.long), TypeError, ["dtype"]),
    (lambda: tree_positions([]), TypeError, ["parents", "non-empty"]),
    (lambda: tree_positions([-1, 1]), ValueError, ["parents[1]", "earlier node"]),
    (lambda: tree_positions([-1, 0.0]), TypeError, ["parents[1]", "int"]),
    (lambda: tree_positions([-1, 0], start=-1), ValueError, ["start", ">= 0"]),
    (lambda: tree_mask([-1, 0], prefix_len=1.0), TypeError, ["prefix_len", "int"]),
    (lambda: tree_mask([-1, -2]), ValueError, ["parents[1]", "-1 (a root)"]),
    (lambda: token_tree(0, 3), ValueError, ["branching", ">= 1"]),
    (lambda: token_tree(8, 6), ValueError, ["4096 leaves"]),
    (lambda: usable_context_length("config.json"), TypeError, ["config", "dict"]),
]


@pytest.mark.parametrize("call, error, words", BAD, ids=[f"bad-{i}" for i in range(len(BAD))])
def test_bad_input_is_named(call, error, words):
    with pytest.raises(error) as info:
        call()
    missing = [w for w in words if w not in str(info.value)]
    assert not missing, f"{missing} not in {str(info.value)!r}"


def test_ring_buffer_positions_must_continue_by_one():
    ring, x = RingBufferCache(1, window=4), torch.zeros(1, 1, 1, 4)
    ring.update(0, x, x, torch.tensor([0]))
    with pytest.raises(ValueError, match="continue by one"):
        ring.update(0, x, x, torch.tensor([3]))


def test_a_mistral_decoded_token_by_token_through_a_ring_of_w_slots_gives_its_own_logits():
    """Past the window too: llama_decode_step (the Mistral's own weights) with a RingBufferCache of W slots gives
    the logits of the Mistral's full forward with its sliding-window mask; a ring of W - 1 slots does not (it lost a key
    the window still sees); a ring of W + 1 slots does too, since llama_decode_step masks by the model's window."""
    model, ids = _mistral(4), torch.randint(1, 50, (1, 12), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        full = model(ids).logits[0]
        gaps = {}
        for slots in (3, 4, 5):
            ring = RingBufferCache(2, window=slots)
            steps = torch.cat([llama_decode_step(model, ids[:, t:t + 1], ring, torch.tensor([t]))[0]
                               for t in range(12)])
            gaps[slots] = _gap(steps, full)
    assert gaps[4] < 1e-5 and gaps[3] > 1e-2 and gaps[5] < 1e-5


def test_the_serving_functions_on_each_device(device):
    """CPU, meta (no tensor made on the CPU behind the caller's back) and CUDA when present: results on the
    inputs' device, and on a real device the same numbers as on the CPU."""
    raw = torch.randn(1, 2, 6, 8, generator=torch.Generator().manual_seed(5))
    keys = apply_rope(raw, torch.arange(6)).to(device)
    moved = rerotate_keys(keys, -2)
    cache = KVCache(1)
    cache.update(0, keys, keys, torch.arange(6, device=device))
    shifted = context_shift(cache, 2, n_keep=1)
    ring = RingBufferCache(1, window=3)
    for t in range(5):
        got = ring.update(0, keys[..., t:t + 1, :], keys[..., t:t + 1, :], torch.tensor([t], device=device))
    bias = window_mask_bias(got.query_positions, got.key_positions, 3)
    made = (moved, shifted.layers[0].keys, shifted.layers[0].positions, got.keys, got.key_positions, bias,
            tree_positions([-1, 0, 0], device=device), tree_mask([-1, 0, 0], prefix_len=2, device=device))
    assert all(t.device.type == device.type for t in made)
    if device.type != "meta":
        assert _gap(moved.cpu(), apply_rope(raw, torch.arange(6) - 2)) < 1e-5
        assert shifted.layers[0].positions.tolist() == [[0, 1, 2, 3]] and got.key_positions.tolist() == [[2, 3, 4]]
        assert (bias == 0).all()


def test_context_shift_keeps_each_token_state_with_its_key():
    """An encoding's token state (PositionalEncoding.token_state) stays with its token: the dropped tokens' states
    go, the kept ones' are as they were made; the given cache keeps its own."""
    keys = torch.randn(1, 2, 10, 8, generator=torch.Generator().manual_seed(0))
    cache = KVCache(1)
    cache.update(0, keys, keys, torch.arange(10), state={"made_at": torch.arange(10.0).view(1, 1, 10, 1)})
    shifted = context_shift(cache, 3, n_keep=2)
    assert shifted.layers[0].state["made_at"].flatten().tolist() == [0, 1, 5, 6, 7, 8, 9]
    assert cache.layers[0].state["made_at"].flatten().tolist() == list(range(10))
    got = shifted.update(0, keys[..., :1, :], keys[..., :1, :], torch.tensor([7]),
                         state={"made_at": torch.full((1, 1, 1, 1), 10.0)})
    assert got.state["made_at"].flatten().tolist() == [0, 1, 5, 6, 7, 8, 9, 10]
