"""posenc_lib.inference: the KV cache, positions from a pad mask, the sink + window cache.

Against TinyLM's own full forward for every encoding, and against transformers on tiny randomly
initialised models built from a config (no download): a Llama run step by step with its DynamicCache,
reproduced by posenc_lib's rotation, cache and attention; generate()'s position rule; left padding
with a learned absolute table (GPT-2); BLOOM, transformers' ALiBi model, reproduced step by step with its
cache and a left-padded batch by posenc_lib's ALiBi bias and cache."""
import pytest
import torch

from posenc_lib import ENCODINGS, ALiBi, MultiHeadAttention, TinyLM, attention
from posenc_lib.inference import (
    KVCache,
    SinkWindowCache,
    cache_mask_bias,
    check_mask,
    decode_step,
    document_mask,
    llama_decode_step,
    packed_position_ids,
    position_ids_from_mask,
)

transformers = pytest.importorskip("transformers")


def _tiny(kind, num_layers=2, **settings):
    torch.manual_seed(0)
    return TinyLM(23, encoding=kind, d_model=32, num_heads=4, num_layers=num_layers, max_len=64, **settings).eval()


def _incremental(model, ids, prefill, cache):
    """Logits of ids fed as one prefill of `prefill` tokens, then one token a step."""
    out = [decode_step(model, ids[:, :prefill], cache)]
    out += [decode_step(model, ids[:, t:t + 1], cache) for t in range(prefill, ids.shape[1])]
    return torch.cat(out, 1)


# ------------------------------------------------------------------ incremental == full, every encoding
@pytest.mark.parametrize("kind", ENCODINGS)
@pytest.mark.parametrize("rotated", [True, False])
def test_incremental_decoding_equals_one_full_forward(kind, rotated):
    model, ids = _tiny(kind), torch.randint(0, 23, (2, 11), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        full, _ = model(ids)
        steps = _incremental(model, ids, 4, KVCache(2, rotated=rotated))
    torch.testing.assert_close(steps, full, atol=2e-6, rtol=0)


def test_a_cache_that_forgets_the_offset_is_refused_and_a_gap_is_wrong():
    """Every new token numbered 0 (no offset) is refused by name; numbered with a gap, the logits differ."""
    model, ids = _tiny("rope"), torch.randint(0, 23, (1, 8), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        full, _ = model(ids)
        cache = KVCache(2)
        decode_step(model, ids[:, :4], cache)
        with pytest.raises(ValueError, match="positions must continue after the cached ones"):
            decode_step(model, ids[:, 4:5], cache, positions=torch.tensor([0]))
        gap = decode_step(model, ids[:, 4:5], cache, positions=torch.tensor([6]))
    assert (gap[:, 0] - full[:, 4]).abs().max() > 1e-2


@pytest.mark.parametrize("scaling", [{"rope_type": "dynamic", "factor": 4.0, "original_max_position_embeddings": 6},
                                     {"rope_type": "longrope", "original_max_position_embeddings": 6,
                                      "short_factor": [1.0] * 4, "long_factor": [1.0, 2.0, 4.0, 8.0],
                                      "factor": 4.0}])
def test_a_scaling_that_changes_with_the_length_needs_unrotated_keys(scaling):
    """One layer: cached unrotated keys, rotated again at every step, give the full forward's last logits;
    keys cached rotated under an earlier step's frequencies do not. (With more layers even unrotated keys
    are not enough: the earlier tokens' hidden states were computed under the earlier frequencies.)"""
    ids = torch.randint(0, 23, (1, 12), generator=torch.Generator().manual_seed(3))
    last = slice(-1, None)  # the full forward uses the frequencies of the whole length, as the last step does
    with torch.no_grad():
        one = _tiny("rope", num_layers=1, rope_scaling=scaling)
        full, _ = one(ids)
        raw = _incremental(one, ids, 3, KVCache(1, rotated=False))
        rotated = _incremental(one, ids, 3, KVCache(1, rotated=True))
        torch.testing.assert_close(raw[:, last], full[:, last], atol=2e-6, rtol=0)
        assert (rotated[:, last] - full[:, last]).abs().max() > 1e-3  # keys rotated under earlier frequencies
        # up to L0 = 6 the frequencies do not change: there the rotated cache is exact
        torch.testing.assert_close(rotated[:, :6], one(ids[:, :6])[0], atol=2e-6, rtol=0)
        two = _tiny("rope", rope_scaling=scaling)
        full2, _ = two(ids)
        raw2 = _incremental(two, ids, 3, KVCache(2, rotated=False))
    assert (raw2[:, last] - full2[:, last]).abs().max() > 1e-5


# ------------------------------------------------------------------ positions from the mask
def test_position_ids_follow_generate():
    """The position_ids generate() passes to the model's forward (read by a forward pre-hook): the prefill's
    are position_ids_from_mask's; the next step's are each row's last column's position + 1, the last real
    position + 1 (KVCache.next_positions) for a row that ends in a real token."""
    mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    assert position_ids_from_mask(mask).tolist() == [[0, 0, 0, 1, 2], [0, 1, 2, 3, 4], [0, 1, 2, 0, 0]]
    model = transformers.LlamaForCausalLM(_llama_config()).eval()
    passed = []
    hook = model.register_forward_pre_hook(lambda module, args, kwargs: passed.append(kwargs["position_ids"]),
                                           with_kwargs=True)
    try:
        with torch.no_grad():
            model.generate(torch.ones(3, 5, dtype=torch.long), attention_mask=mask, max_new_tokens=2, do_sample=False)
    finally:
        hook.remove()
    prefill, step = passed
    assert torch.equal(position_ids_from_mask(mask), prefill)
    assert step[:2, 0].tolist() == [3, 5] and step[2, 0] == prefill[2, -1] + 1
    # with a cache: the next tokens continue from each row's last real position
    more = position_ids_from_mask(torch.tensor([[1, 1], [1, 1], [1, 1]]), start=torch.tensor([3, 5, 3]))
    assert more.tolist() == [[3, 4], [5, 6], [3, 4]]
    assert position_ids_from_mask(mask.bool()).tolist() == position_ids_from_mask(mask).tolist()


def test_packed_documents_restart_their_positions():
    assert packed_position_ids([3, 2, 1]).tolist() == [0, 1, 2, 0, 1, 0]
    mask = document_mask([2, 2])
    assert mask.tolist() == [[True, False, False, False], [True, True, False, False],
                             [False, False, True, False], [False, False, True, True]]


@pytest.mark.parametrize("kind", ["rope", "alibi", "learned", "t5"])
def test_left_padded_batch_equals_the_unpadded_sequences(kind):
    model = _tiny(kind)
    gen = torch.Generator().manual_seed(4)
    a, b = torch.randint(1, 23, (7,), generator=gen), torch.randint(1, 23, (4,), generator=gen)
    batch = torch.stack([a, torch.cat((torch.zeros(3, dtype=torch.long), b))])
    mask = torch.tensor([[1] * 7, [0, 0, 0, 1, 1, 1, 1]])
    nxt = torch.tensor([[5], [9]])
    with torch.no_grad():
        single, _ = model(torch.cat((b, torch.tensor([9])))[None])
        cache = KVCache(2)
        first, second = decode_step(model, batch, cache, attention_mask=mask), decode_step(model, nxt, cache)
        torch.testing.assert_close(torch.cat((first[1, 3:], second[1])), single[0], atol=2e-6, rtol=0)
        # rotated/numbered from 0 with the pads: the real tokens sit 3 places later
        shifted = decode_step(model, batch, KVCache(2), positions=torch.arange(7), attention_mask=mask)
        gap = (shifted[1, 3:] - single[0, :4]).abs().max()
        if kind == "learned":  # an absolute table sees the shift
            assert gap > 1e-2
        else:  # relative encodings see key - query only: a shift of the whole row changes nothing
            assert gap < 2e-6
        # pads not masked: the padded row attends to them
        unmasked = decode_step(model, batch, KVCache(2))
        assert (unmasked[1, 3:] - single[0, :4]).abs().max() > 1e-2


def test_positions_that_jump_between_prefill_and_decode_are_wrong_for_rope():
    """Prefill counted from the mask, then the next token numbered after ALL slots (pads too): a gap."""
    model = _tiny("rope")
    b = torch.randint(1, 23, (4,), generator=torch.Generator().manual_seed(5))
    padded, mask = torch.cat((torch.zeros(3, dtype=torch.long), b))[None], torch.tensor([[0, 0, 0, 1, 1, 1, 1]])
    with torch.no_grad():
        single, _ = model(torch.cat((b, torch.tensor([9])))[None])
        cache = KVCache(2)
        decode_step(model, padded, cache, attention_mask=mask)
        jumped = decode_step(model, torch.tensor([[9]]), cache, positions=torch.tensor([7]))
    assert (jumped[0, 0] - single[0, 4]).abs().max() > 1e-3


# ------------------------------------------------------------------ against transformers: Llama with its DynamicCache
def _llama_config(**kw):
    return transformers.LlamaConfig(vocab_size=50, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                    initializer_range=0.2, **kw)


def _llama():
    torch.manual_seed(6)
    return transformers.LlamaForCausalLM(_llama_config()).eval()


def test_posenc_lib_reproduces_llama_step_by_step():
    model = _llama()
    ids = torch.randint(0, 50, (1, 9), generator=torch.Generator().manual_seed(7))
    with torch.no_grad():
        hf_cache = transformers.DynamicCache(config=model.config)
        theirs = [model(ids[:, :5], cache=hf_cache, use_cache=True).logits]
        ours_cache = KVCache(2)
        ours = [llama_decode_step(model, ids[:, :5], ours_cache, torch.arange(5))]
        for t in range(5, 9):
            theirs.append(model(ids[:, t:t + 1], cache=hf_cache, use_cache=True).logits)
            ours.append(llama_decode_step(model, ids[:, t:t + 1], ours_cache, torch.tensor([t])))
        full = model(ids).logits
    theirs, ours = torch.cat(theirs, 1), torch.cat(ours, 1)
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=0)
    torch.testing.assert_close(theirs, full, atol=1e-5, rtol=0)
    # the cached keys are the same numbers: rotated at their positions, (batch, kv_heads, T, head_dim)
    torch.testing.assert_close(ours_cache.layers[1].keys, hf_cache.layers[1].keys, atol=1e-5, rtol=0)
    # and the check can fail: the last step's query at the wrong position
    wrong_cache = KVCache(2)
    with torch.no_grad():
        llama_decode_step(model, ids[:, :8], wrong_cache, torch.arange(8))
        wrong = llama_decode_step(model, ids[:, 8:], wrong_cache, torch.tensor([20]))
    assert (wrong[0, 0] - theirs[0, 8]).abs().max() > 1e-3


def test_llama_left_padding_with_generate_rule_positions():
    model = _llama()
    gen = torch.Generator().manual_seed(8)
    a, b = torch.randint(1, 50, (7,), generator=gen), torch.randint(1, 50, (4,), generator=gen)
    ids = torch.stack([a, torch.cat((torch.zeros(3, dtype=torch.long), b))])
    mask = torch.tensor([[1] * 7, [0, 0, 0, 1, 1, 1, 1]])
    positions = position_ids_from_mask(mask)
    with torch.no_grad():
        single = model(b[None]).logits[0]
        theirs = model(ids, attention_mask=mask, position_ids=positions).logits
        ours = llama_decode_step(model, ids, KVCache(2), positions, attention_mask=mask)
        jump_cache = transformers.DynamicCache(config=model.config)
        model(ids, attention_mask=mask, position_ids=positions, cache=jump_cache)
        after = model(torch.tensor([[3], [3]]), attention_mask=torch.cat((mask, torch.ones(2, 1, dtype=torch.long)), 1),
                      cache=jump_cache).logits  # no position_ids: HF numbers it 7 (the cache's length)
        right = model(torch.cat((b, torch.tensor([3])))[None]).logits[0, -1]
    torch.testing.assert_close(ours[1, 3:], single, atol=1e-5, rtol=0)
    torch.testing.assert_close(theirs[1, 3:], single, atol=1e-5, rtol=0)
    assert (after[1, 0] - right).abs().max() > 1e-3   # positions 0..3 cached, then 7: the gap shows


def test_gpt2_left_padding_needs_the_mask_positions():
    """A learned absolute table (GPT-2): numbering a left-padded row from 0 changes its logits."""
    torch.manual_seed(9)
    config = transformers.GPT2Config(vocab_size=50, n_embd=32, n_layer=2, n_head=4, n_positions=32)
    model = transformers.GPT2LMHeadModel(config).eval()
    b = torch.randint(1, 50, (4,), generator=torch.Generator().manual_seed(10))
    ids, mask = torch.cat((torch.zeros(3, dtype=torch.long), b))[None], torch.tensor([[0, 0, 0, 1, 1, 1, 1]])
    with torch.no_grad():
        single = model(b[None]).logits[0]
        right = model(ids, attention_mask=mask, position_ids=position_ids_from_mask(mask)).logits[0, 3:]
        from_zero = model(ids, attention_mask=mask, position_ids=torch.arange(7)[None]).logits[0, 3:]
    torch.testing.assert_close(right, single, atol=1e-5, rtol=0)
    assert (from_zero - single).abs().max() > 1e-3


def _bloom():
    torch.manual_seed(11)
    config = transformers.BloomConfig(vocab_size=50, hidden_size=32, n_layer=2, n_head=4, initializer_range=0.2)
    return transformers.BloomForCausalLM(config).eval()


def _bloom_step(model, ids, cache, mask):
    """BLOOM's weights, norms and MLPs; the ALiBi bias (posenc_lib.ALiBi at positions from the mask), the cache
    and the attention posenc_lib's. BLOOM itself adds slope * key position (its build_alibi_tensor), which
    differs from -slope * |query - key| by a constant per row: the softmax is the same."""
    body, heads = model.transformer, model.config.n_head
    alibi = ALiBi(heads)
    valid = mask.bool()
    positions = position_ids_from_mask(valid, cache.next_positions())
    x = body.word_embeddings_layernorm(body.word_embeddings(ids))
    B, T, D = x.shape
    for i, block in enumerate(body.h):
        h = block.input_layernorm(x)
        fused = block.self_attention.query_key_value(h).view(B, T, heads, 3, D // heads)   # BLOOM's layout
        q, k, v = (fused[..., j, :].transpose(1, 2) for j in range(3))                   # (B, H, T, hd)
        got = cache.update(i, k, v, positions, valid)
        bias = cache_mask_bias(got.key_valid, T, q.dtype) + alibi(q, got.query_positions, got.key_positions)
        out = attention(q, got.keys, got.values, bias=bias)
        x = block.self_attention.dense(out.transpose(1, 2).reshape(B, T, D)) + x
        x = block.mlp(block.post_attention_layernorm(x), x)
    return model.lm_head(body.ln_f(x))


def test_posenc_lib_alibi_reproduces_bloom_padded_and_cached():
    """transformers' ALiBi model (BLOOM), a left-padded batch fed as a prefill and two decode steps with its
    DynamicCache: posenc_lib's ALiBi bias, cache and positions from the mask give the same logits, and the
    padded row equals the prompt run alone."""
    model = _bloom()
    gen = torch.Generator().manual_seed(12)
    a, b = torch.randint(1, 50, (6,), generator=gen), torch.randint(1, 50, (4,), generator=gen)
    ids = torch.stack([a, torch.cat((torch.zeros(2, dtype=torch.long), b))])
    mask = torch.tensor([[1] * 6, [0, 0, 1, 1, 1, 1]])
    steps = torch.tensor([[7, 8], [9, 10]])
    with torch.no_grad():
        hf_cache, ours = transformers.DynamicCache(config=model.config), KVCache(2)
        theirs = [model(ids, attention_mask=mask, cache=hf_cache, use_cache=True).logits]
        mine = [_bloom_step(model, ids, ours, mask)]
        for t in range(2):
            mask = torch.cat((mask, torch.ones(2, 1, dtype=torch.long)), 1)
            theirs.append(model(steps[:, t:t + 1], attention_mask=mask, cache=hf_cache, use_cache=True).logits)
            mine.append(_bloom_step(model, steps[:, t:t + 1], ours, torch.ones(2, 1, dtype=torch.long)))
        alone = model(torch.cat((b, steps[1]))[None]).logits[0]
    theirs, mine = torch.cat(theirs, 1), torch.cat(mine, 1)
    torch.testing.assert_close(mine[0], theirs[0], atol=1e-5, rtol=0)
    torch.testing.assert_close(mine[1, 2:], theirs[1, 2:], atol=1e-5, rtol=0)   # the pads' own rows are unused
    torch.testing.assert_close(theirs[1, 2:], alone, atol=1e-5, rtol=0)
    assert ours.next_positions().tolist() == [8, 6]
    # and the check can fail: the padded row's keys numbered from slot 0 under a bias without the mask's count
    with torch.no_grad():
        wrong = _bloom_step(model, ids, KVCache(2), torch.ones(2, 6, dtype=torch.long))   # pads taken as tokens
    assert (wrong[1, 2:] - alone[:4]).abs().max() > 1e-3


# ------------------------------------------------------------------ the sink + window cache
def test_sink_window_cache_keeps_sinks_and_window_and_counts_positions_in_the_cache():
    model = _tiny("rope", num_layers=1)  # one layer: a kept token's key does not depend on the evicted ones
    ids = torch.randint(0, 23, (1, 20), generator=torch.Generator().manual_seed(13))
    cache = SinkWindowCache(1, num_sinks=2, window=5)
    with torch.no_grad():
        for t in range(20):
            logits = decode_step(model, ids[:, t:t + 1], cache, positions=torch.tensor([t]))
        assert cache.text_positions().tolist() == [[0, 1, 15, 16, 17, 18, 19]]
        assert len(cache) == 7
        # the same as a full forward over just the kept tokens, numbered 0..6
        kept, _ = model(ids[:, [0, 1, 15, 16, 17, 18, 19]])
    torch.testing.assert_close(logits[:, -1], kept[:, -1], atol=2e-6, rtol=0)
    # and not what the kept tokens give at their text positions (rotated cache never re-rotated)
    with torch.no_grad():
        at_text, _ = model(ids[:, [0, 1, 15, 16, 17, 18, 19]], positions=torch.tensor([0, 1, 15, 16, 17, 18, 19]))
    assert (at_text[:, -1] - kept[:, -1]).abs().max() > 1e-3


# ------------------------------------------------------------------ bad input
def test_bad_input_is_named():
    cache = KVCache(1)
    k = torch.randn(1, 2, 3, 8)
    cache.update(0, k, k, torch.arange(3))
    with pytest.raises(ValueError, match="k must have the cached head size"):
        cache.update(0, torch.randn(1, 2, 1, 6), torch.randn(1, 2, 1, 6), torch.tensor([3]))
    with pytest.raises(ValueError, match="positions must continue after the cached ones"):
        cache.update(0, torch.randn(1, 2, 1, 8), torch.randn(1, 2, 1, 8), torch.tensor([1]))
    with pytest.raises(ValueError, match="positions must have shape"):
        cache.update(0, torch.randn(1, 2, 1, 8), torch.randn(1, 2, 1, 8), torch.tensor([3, 4]))
    with pytest.raises(ValueError, match=r"attention_mask must have shape \(batch, seq\)"):
        position_ids_from_mask(torch.ones(5, dtype=torch.long))
    with pytest.raises(ValueError, match="attention_mask must hold only 0"):
        position_ids_from_mask(torch.tensor([[0, 2, 1]]))
    model = _tiny("rope")
    with pytest.raises(ValueError, match=r"attention_mask must have shape \(batch, seq\) = \(1, 3\)"):
        decode_step(model, torch.zeros(1, 3, dtype=torch.long), KVCache(2), attention_mask=torch.ones(1, 4))
    with pytest.raises(ValueError, match="cache must be a KVCache with num_layers=2"):
        decode_step(model, torch.zeros(1, 3, dtype=torch.long), KVCache(3))
    with pytest.raises(ValueError, match="at most window=2"):
        SinkWindowCache(1, num_sinks=1, window=2).update(0, torch.randn(1, 1, 3, 4), torch.randn(1, 1, 3, 4),
                                                         torch.arange(3))
    # nothing given is changed in place
    before = k.clone()
    cache.update(0, torch.randn(1, 2, 1, 8), torch.randn(1, 2, 1, 8), torch.tensor([3]))
    assert torch.equal(k, before)


def test_learned_table_bounds_the_cache():
    model = _tiny("learned")
    with pytest.raises((ValueError, IndexError)):
        decode_step(model, torch.zeros(1, 1, dtype=torch.long), KVCache(2), positions=torch.tensor([64]))


def test_meta_device():
    cache = KVCache(1)
    k = torch.randn(2, 2, 3, 8, device="meta")
    got = cache.update(0, k, k, torch.arange(3, device="meta"))
    assert got.keys.device.type == "meta" and got.key_positions.shape == (2, 3)
    assert cache.next_positions().device.type == "meta"


@pytest.mark.parametrize("kind", ["rope", "alibi"])
def test_decoding_on_each_device(kind, device):
    """CPU, meta (no tensor made on the CPU behind the caller's back) and CUDA when present."""
    model = _tiny(kind).to(device)
    ids = torch.randint(0, 23, (2, 6), generator=torch.Generator().manual_seed(14)).to(device)
    mask = torch.tensor([[1] * 6, [0, 0, 1, 1, 1, 1]], device=device)
    with torch.no_grad():
        cache = KVCache(2)
        first = decode_step(model, ids[:, :5], cache, attention_mask=mask[:, :5])
        second = decode_step(model, ids[:, 5:], cache)
        assert first.device.type == second.device.type == device.type and second.shape == (2, 1, 23)
        assert cache.next_positions().device.type == device.type
        if device.type != "meta":
            assert cache.next_positions().tolist() == [6, 4]
            full, _ = model(ids[:1])
            torch.testing.assert_close(torch.cat((first[:1], second[:1]), 1), full, atol=2e-5, rtol=0)


def test_more_bad_input():
    with pytest.raises(ValueError, match="at least one new token"):
        KVCache(1).update(0, torch.randn(1, 1, 0, 4), torch.randn(1, 1, 0, 4), torch.arange(0))
    with pytest.raises(TypeError, match="model must be a posenc_lib TinyLM"):
        decode_step(_llama(), torch.zeros(1, 2, dtype=torch.long), KVCache(2))
    with pytest.raises(ValueError, match="layer must be an int"):
        KVCache(2).update(2, torch.randn(1, 1, 1, 4), torch.randn(1, 1, 1, 4), torch.arange(1))
    with pytest.raises(ValueError, match="cache must be a KVCache\\(num_layers=2, rotated=True\\)"):
        llama_decode_step(_llama(), torch.zeros(1, 2, dtype=torch.long), KVCache(2, rotated=False), torch.arange(2))


@pytest.mark.parametrize("kind", ["rope", "alibi"])
def test_a_cached_decode_compiles_as_one_graph(kind):
    """No host read in the decode path: a padded prefill and a step trace as one graph (the value checks run
    only where values are cheap, which a trace is not) and give the eager logits."""
    model = _tiny(kind)
    ids = torch.randint(0, 23, (2, 6), generator=torch.Generator().manual_seed(15))
    mask = torch.tensor([[1] * 5, [0, 0, 1, 1, 1]])

    def run(ids, mask):
        cache = KVCache(2)
        return torch.cat((decode_step(model, ids[:, :5], cache, attention_mask=mask),
                          decode_step(model, ids[:, 5:], cache)), 1)

    torch._dynamo.reset()
    compiled = torch.compile(run, fullgraph=True, backend="eager")
    with torch.no_grad():
        torch.testing.assert_close(compiled(ids, mask), run(ids, mask), atol=0, rtol=0)


# ------------------------------------------------------------------ bad input: one table, every public function
LONG, META = torch.long, torch.device("meta")
K = torch.randn(1, 2, 3, 8)
MASK = torch.ones(2, 3, dtype=LONG)


def _model():
    return _tiny("rope")


_LLAMA: list = []


def _shared_llama():
    if not _LLAMA:
        _LLAMA.append(_llama())
    return _LLAMA[0]


def _cached(layer_keys=K, num_layers=1, **settings):
    """A cache that already holds positions 0..2 in layer 0."""
    cache = KVCache(num_layers, **settings)
    cache.update(0, layer_keys, layer_keys, torch.arange(layer_keys.shape[-2]))
    return cache


def _step(cache, k=None, v=None, positions=None, valid=None, layer=0):
    k = torch.randn(1, 2, 1, 8) if k is None else k
    return cache.update(layer, k, k if v is None else v, torch.tensor([3]) if positions is None else positions, valid)


def _attend(x=None, cache=None, layer=0, positions=None, attn=None, **kw):
    attn = _model().blocks[0].attn if attn is None else attn
    x = torch.randn(1, 2, 32) if x is None else x
    return attn(x, torch.arange(2) if positions is None else positions, cache=KVCache(2) if cache is None else cache,
                layer=layer, **kw)


def _cached_with_state():
    """A cache whose layer 0 holds 3 tokens and a token state "g" of shape (1, 2, 3, 1)."""
    cache = KVCache(1)
    cache.update(0, K, K, torch.arange(3), state={"g": K[..., :1]})
    return cache


def _decode(ids=None, cache=None, **kw):
    return decode_step(_model(), torch.zeros(1, 3, dtype=LONG) if ids is None else ids,
                       KVCache(2) if cache is None else cache, **kw)


def _llama_step(ids=None, positions=None, cache=None, mask=None, model=None):
    return llama_decode_step(_shared_llama() if model is None else model,
                             torch.zeros(1, 3, dtype=LONG) if ids is None else ids,
                             KVCache(2) if cache is None else cache,
                             torch.arange(3) if positions is None else positions, mask)


BAD = [  # (id, call, error type, what the message must say)
    # position_ids_from_mask: the mask, and start
    ("mask list", lambda: position_ids_from_mask([[1, 1]]), TypeError, r"attention_mask must be a torch.Tensor of 0/1"),
    ("mask complex", lambda: position_ids_from_mask(torch.ones(1, 2, dtype=torch.complex64)), TypeError,
     r"attention_mask must hold 0/1"),
    ("mask 1-D", lambda: position_ids_from_mask(torch.ones(3, dtype=LONG)), ValueError,
     r"attention_mask must have shape \(batch, seq\)"),
    ("mask of 2", lambda: position_ids_from_mask(torch.tensor([[0, 2, 1]])), ValueError,
     r"attention_mask must hold only 0"),
    ("check_mask shape of its tokens", lambda: check_mask("valid", torch.ones(2, 3), shape=(2, 4)), ValueError,
     r"valid must have shape \(batch, seq\) = \(2, 4\), one entry per token, got \(2, 3\)"),
    ("check_mask floats of 0.5", lambda: check_mask("valid", torch.full((1, 2), 0.5)), ValueError,
     r"valid must hold only 0 \(padding\) and 1"),
    ("start float", lambda: position_ids_from_mask(MASK, torch.tensor([1.0, 2.0])), TypeError,
     r"start must be an integer tensor"),
    ("start list", lambda: position_ids_from_mask(MASK, [1, 2]), TypeError, r"start must be a torch.Tensor"),
    ("start shape", lambda: position_ids_from_mask(MASK, torch.tensor([1, 2, 3])), ValueError,
     r"start must have shape \(batch,\) = \(2,\)"),
    ("start (batch, 1)", lambda: position_ids_from_mask(MASK, torch.tensor([[1], [2]])), ValueError,
     r"start must have shape \(batch,\)"),
    ("start near the int64 limit", lambda: position_ids_from_mask(MASK, torch.tensor([2 ** 63 - 1, 0])), ValueError,
     r"start must lie in \[0, 2\*\*53 - seq \+ 1\] with seq=3.*max 9223372036854775807"),
    ("start negative", lambda: position_ids_from_mask(MASK, torch.tensor([-1, 0])), ValueError,
     r"start must lie in \[0, .*min -1"),
    ("start on another device", lambda: position_ids_from_mask(MASK, torch.zeros(2, dtype=LONG, device=META)),
     ValueError, r"start must be on the device of the tensor it indexes \(cpu\), got meta"),
    # packed_position_ids, document_mask: lengths and device
    *[(f"{name} {label}", lambda f=f, bad=bad: f(bad), error, pattern)
      for name, f in (("packed", packed_position_ids), ("document_mask", document_mask))
      for label, bad, error, pattern in [
          ("int", 5, TypeError, r"lengths must be a list of positive ints.*got int"),
          ("string", "32", TypeError, r"lengths must be a list of positive ints.*got str"),
          ("empty", [], ValueError, r"lengths must hold at least one length"),
          ("zero", [3, 0], ValueError, r"lengths\[1\] must be >= 1, got 0"),
          ("float", [3, 2.5], TypeError, r"lengths\[1\] must be an int, got float"),
          ("bool", [True], TypeError, r"lengths\[0\] must be an int, got bool"),
          ("2-D tensor", torch.ones(2, 2, dtype=LONG), ValueError, r"lengths must be a 1-D list"),
          ("float tensor", torch.ones(2), TypeError, r"lengths must be an integer tensor"),
          ("a billion tokens", [10 ** 9], ValueError, r"sum\(lengths\) must be <= "),
          ("2**40 tokens", [2 ** 40, 1], ValueError, r"sum\(lengths\) must be <= ")]],
    ("document_mask past its limit", lambda: document_mask([20000]), ValueError,
     r"sum\(lengths\) must be <= 16,384 \(the mask is T x T bools\), got 20,000"),
    ("packed bad device", lambda: packed_position_ids([2], device="gpu"), ValueError,
     r"device must name a device such as 'cpu'"),
    ("document_mask device type", lambda: document_mask([2], device=1.5), TypeError,
     r"device must be a torch.device, a device name"),
    # cache_mask_bias
    ("bias key_valid list", lambda: cache_mask_bias([[True]], 1, torch.float32), TypeError,
     r"key_valid must be a torch.Tensor"),
    ("bias key_valid 1-D", lambda: cache_mask_bias(torch.ones(4, dtype=torch.bool), 1, torch.float32), ValueError,
     r"key_valid must have shape \(batch, seq\)"),
    ("bias q_len 0", lambda: cache_mask_bias(torch.ones(1, 4, dtype=torch.bool), 0, torch.float32), ValueError,
     r"q_len must be >= 1"),
    ("bias q_len float", lambda: cache_mask_bias(torch.ones(1, 4, dtype=torch.bool), 1.0, torch.float32), TypeError,
     r"q_len must be an int"),
    ("bias q_len > Tk", lambda: cache_mask_bias(torch.ones(1, 4, dtype=torch.bool), 5, torch.float32), ValueError,
     r"q_len must be <= 4 \(the queries are the last q_len of key_valid's Tk slots\), got 5"),
    ("bias int dtype", lambda: cache_mask_bias(torch.ones(1, 4, dtype=torch.bool), 1, torch.int64), TypeError,
     r"dtype must be a floating-point dtype"),
    ("bias dtype None", lambda: cache_mask_bias(torch.ones(1, 4, dtype=torch.bool), 1, None), TypeError,
     r"dtype must be a floating-point torch.dtype"),
    ("bias dtype string", lambda: cache_mask_bias(torch.ones(1, 4, dtype=torch.bool), 1, "float32"), TypeError,
     r"dtype must be a torch.dtype or None, got str"),
    # KVCache and SinkWindowCache: settings
    ("KVCache 0 layers", lambda: KVCache(0), ValueError, r"num_layers must be >= 1"),
    ("KVCache a billion layers", lambda: KVCache(10 ** 9), ValueError,
     r"num_layers must be <= 1,024 \(one entry per layer\), got 1,000,000,000"),
    ("KVCache float layers", lambda: KVCache(2.0), TypeError, r"num_layers must be an int"),
    ("KVCache rotated string", lambda: KVCache(2, rotated="no"), TypeError, r"rotated must be a bool"),
    ("SinkWindowCache negative sinks", lambda: SinkWindowCache(1, num_sinks=-1), ValueError, r"num_sinks must be >= 0"),
    ("SinkWindowCache window 0", lambda: SinkWindowCache(1, window=0), ValueError, r"window must be >= 1"),
    ("SinkWindowCache layers", lambda: SinkWindowCache(10 ** 6), ValueError, r"num_layers must be <= 1,024"),
    # KVCache.update
    ("update layer float", lambda: _step(KVCache(2), layer=1.0), TypeError,
     r"layer must be an int in \[0, num_layers=2\)"),
    ("update layer bool", lambda: _step(KVCache(2), layer=True), TypeError, r"layer must be an int"),
    ("update layer past the cache", lambda: _step(KVCache(2), layer=2), ValueError,
     r"layer must be an int in \[0, num_layers=2\), got 2"),
    ("update layer negative", lambda: _step(KVCache(2), layer=-1), ValueError, r"layer must be an int in \[0, "),
    ("update int k", lambda: _step(KVCache(1), k=torch.ones(1, 2, 1, 8, dtype=LONG)), TypeError,
     r"k must be a floating-point tensor"),
    ("update k 3-D", lambda: _step(KVCache(1), k=torch.randn(2, 1, 8)), ValueError,
     r"k must have shape \(batch, kv_heads, seq, head_dim\)"),
    ("update v list", lambda: _step(KVCache(1), v=[[0.0]]), TypeError, r"v must be a torch.Tensor"),
    ("update v seq", lambda: _step(KVCache(1), v=torch.randn(1, 2, 2, 8)), ValueError,
     r"k and v must share \(batch, kv_heads, seq\)"),
    ("update v on meta", lambda: _step(KVCache(1), v=torch.randn(1, 2, 1, 8, device=META)), ValueError,
     r"v must be on k's device \(cpu\), got meta"),
    ("update no tokens", lambda: _step(KVCache(1), k=torch.randn(1, 2, 0, 8), positions=torch.arange(0)), ValueError,
     r"k must hold at least one new token"),
    ("update float positions", lambda: _step(KVCache(1), positions=torch.tensor([3.0])), TypeError,
     r"positions must be an integer tensor"),
    ("update positions too long", lambda: _step(KVCache(1), positions=torch.tensor([3, 4])), ValueError,
     r"positions must have shape \(seq,\) or \(batch, seq\) with seq=1"),
    ("update positions past 2**53", lambda: _step(KVCache(1), positions=torch.tensor([2 ** 60])), ValueError,
     r"positions must lie within \+-2\*\*53"),
    ("update valid shape", lambda: _step(KVCache(1), valid=torch.ones(1, 2, dtype=torch.bool)), ValueError,
     r"valid must have shape \(batch, seq\) = \(1, 1\)"),
    ("update head size changes", lambda: _step(_cached(), k=torch.randn(1, 2, 1, 6)), ValueError,
     r"k must have the cached head size"),
    ("update heads change", lambda: _step(_cached(), k=torch.randn(1, 3, 1, 8)), ValueError,
     r"k must have the cached \(batch, kv_heads\) = \(1, 2\)"),
    ("update dtype changes", lambda: _step(_cached(), k=torch.randn(1, 2, 1, 8, dtype=torch.float64)), ValueError,
     r"k must have the cached dtype torch.float32 in layer 0, got torch.float64"),
    ("update v dtype changes", lambda: _step(_cached(), v=torch.randn(1, 2, 1, 8).half()), ValueError,
     r"v must have the cached dtype torch.float32"),
    ("update on another device than the cache", lambda: _step(_cached(), k=torch.randn(1, 2, 1, 8, device=META),
                                                             positions=torch.tensor([3], device=META)), ValueError,
     r"k must be on the cache's device \(cpu\), got meta"),
    ("update positions go back", lambda: _step(_cached(), positions=torch.tensor([1])), ValueError,
     r"positions must continue after the cached ones"),
    ("SinkWindowCache valid", lambda: _step(SinkWindowCache(1), valid=torch.ones(1, 1, dtype=torch.bool)), ValueError,
     r"valid: SinkWindowCache takes no padding"),
    ("SinkWindowCache too many at once", lambda: _step(SinkWindowCache(1, window=2), k=torch.randn(1, 1, 3, 4),
                                                       positions=torch.arange(3)), ValueError, r"at most window=2"),
    ("text_positions past the layers", lambda: SinkWindowCache(2).text_positions(2), ValueError,
     r"layer must be an int in \[0, num_layers=2\), got 2"),
    ("text_positions string layer", lambda: SinkWindowCache(2).text_positions("0"), TypeError,
     r"layer must be an int in \[0, num_layers=2\), got str"),
    # MultiHeadAttention with a cache
    ("attention not causal", lambda: _attend(attn=MultiHeadAttention(32, 4)), ValueError,
     r"cache: a KV cache holds the earlier tokens of a causal decoder; this attention has causal=False"),
    ("attention window 0", lambda: _attend(window=0), ValueError, r"window must be"),
    ("attention state a list", lambda: KVCache(1).update(0, K, K, torch.arange(3), state=[K]), TypeError,
     r"state must be a dict name -> tensor, the encoding's token_state, got list"),
    ("attention state 3-D", lambda: KVCache(1).update(0, K, K, torch.arange(3), state={"g": K[0]}), ValueError,
     r"state\['g'\] must have shape \(batch=1, \*, seq=3, \*\), the tokens on dim 2 as in k, got \(2, 3, 8\)"),
    ("attention state dropped", lambda: _cached_with_state().update(0, K[..., :1, :], K[..., :1, :],
                                                                   torch.tensor([3])), TypeError,
     r"state must be a dict name -> tensor, the encoding's token_state \(layer 0 holds one\), got NoneType"),
    ("attention state added late", lambda: _cached().update(0, K[..., :1, :], K[..., :1, :], torch.tensor([3]),
                                                           state={"g": K[..., :1, :1]}), ValueError,
     r"state must be None in layer 0: its cached tokens keep no token state, got \['g'\]"),
    ("attention state renamed", lambda: _cached_with_state().update(0, K[..., :1, :], K[..., :1, :], torch.tensor([3]),
                                                                    state={"h": K[..., :1, :1]}), ValueError,
     r"state must have the cached names \['g'\] in layer 0, got \['h'\]"),
    ("attention state resized", lambda: _cached_with_state().update(0, K[..., :1, :], K[..., :1, :], torch.tensor([3]),
                                                                    state={"g": K[..., :1, :2]}), ValueError,
     r"state\['g'\] must match the cached one \(shape \(batch, 2, seq, 1\), torch.float32\) in layer 0"),
    ("attention int x", lambda: _attend(x=torch.ones(1, 2, 32, dtype=LONG)), TypeError, r"x must be a floating-point"),
    ("attention x 2-D", lambda: _attend(x=torch.randn(2, 32)), ValueError,
     r"x must have shape \(batch, seq >= 1, d_model=32\), got \(2, 32\)"),
    ("attention x width", lambda: _attend(x=torch.randn(1, 2, 16)), ValueError, r"x must have shape .*d_model=32"),
    ("attention x empty", lambda: _attend(x=torch.randn(1, 0, 32), positions=torch.arange(0)), ValueError,
     r"x must have shape \(batch, seq >= 1"),
    ("attention x float64", lambda: _attend(x=torch.randn(1, 2, 32, dtype=torch.float64)), ValueError,
     r"x must have the attention's dtype torch.float32, got torch.float64"),
    ("attention x on meta", lambda: _attend(x=torch.randn(1, 2, 32, device=META)), ValueError,
     r"qkv must be on x's device \(meta\), got cpu"),
    ("attention cache a list", lambda: _attend(cache=[]), TypeError, r"cache must be a posenc_lib KVCache, got list"),
    ("attention layer", lambda: _attend(layer=5), ValueError, r"layer must be an int in \[0, num_layers=2\)"),
    ("attention positions", lambda: _attend(positions=torch.arange(3)), ValueError, r"positions must have shape"),
    # decode_step
    ("decode model a Module", lambda: decode_step(torch.nn.Linear(2, 2), torch.zeros(1, 1, dtype=LONG), KVCache(2)),
     TypeError, r"model must be a posenc_lib TinyLM, got Linear"),
    ("decode float ids", lambda: _decode(torch.zeros(1, 3)), TypeError, r"idx must be an integer tensor"),
    ("decode ids 1-D", lambda: _decode(torch.zeros(3, dtype=LONG)), ValueError,
     r"idx must have shape \(batch, seq\) with seq >= 1, got \(3,\)"),
    ("decode no new token", lambda: _decode(torch.zeros(1, 0, dtype=LONG)), ValueError,
     r"idx must have shape \(batch, seq\) with seq >= 1, got \(1, 0\)"),
    ("decode ids past the vocabulary", lambda: _decode(torch.tensor([[3, 23]])), ValueError,
     r"idx must hold token ids in \[0, vocab_size=23\), got min 3, max 23"),
    ("decode negative id", lambda: _decode(torch.tensor([[-1, 0]])), ValueError, r"idx must hold token ids in \[0, "),
    ("decode ids on meta", lambda: _decode(torch.zeros(1, 2, dtype=LONG, device=META)), ValueError,
     r"idx must be on model's device \(cpu\), got meta"),
    ("decode cache of 3 layers", lambda: _decode(cache=KVCache(3)), ValueError,
     r"cache must be a KVCache with num_layers=2"),
    ("decode cache a dict", lambda: _decode(cache={}), ValueError, r"cache must be a KVCache"),
    ("decode mask shape", lambda: _decode(attention_mask=torch.ones(1, 4)), ValueError,
     r"attention_mask must have shape \(batch, seq\) = \(1, 3\)"),
    ("decode mask values", lambda: _decode(attention_mask=torch.tensor([[1, 2, 1]])), ValueError,
     r"attention_mask must hold only 0"),
    ("decode mask on meta", lambda: _decode(attention_mask=torch.ones(1, 3, device=META, dtype=torch.bool)),
     ValueError, r"attention_mask must be on the token ids' device \(cpu\), got meta"),
    ("decode float positions", lambda: _decode(positions=torch.arange(3.0)), TypeError,
     r"positions must be an integer tensor"),
    ("decode positions shape", lambda: _decode(positions=torch.arange(4)), ValueError,
     r"positions must have shape \(seq,\) or \(batch, seq\) with seq=3"),
    ("decode positions batch", lambda: _decode(positions=torch.zeros(2, 3, dtype=LONG)), ValueError,
     r"positions of shape \(2, 3\) does not fit: expected batch 1"),
    ("decode learned past its table", lambda: decode_step(_tiny("learned"), torch.zeros(1, 1, dtype=LONG), KVCache(2),
                                                          positions=torch.tensor([64])), ValueError,
     r"positions must lie in \[0, max_len=64\)"),
    # llama_decode_step (which model classes it runs is the decode loop's own table)
    ("llama model a function", lambda: _llama_step(model=len), TypeError,
     r"model must be a transformers causal LM .*got builtin_function_or_method"),
    ("llama float ids", lambda: _llama_step(ids=torch.zeros(1, 3)), TypeError, r"input_ids must be an integer tensor"),
    ("llama ids 1-D", lambda: _llama_step(ids=torch.zeros(3, dtype=LONG)), ValueError,
     r"input_ids must have shape \(batch, seq\)"),
    ("llama ids past the vocabulary", lambda: _llama_step(ids=torch.tensor([[0, 50, 1]])), ValueError,
     r"input_ids must hold token ids in \[0, vocab_size=50\), got min 0, max 50"),
    ("llama ids on meta", lambda: _llama_step(ids=torch.zeros(1, 3, dtype=LONG, device=META)), ValueError,
     r"input_ids must be on model's device \(cpu\), got meta"),
    ("llama positions list", lambda: _llama_step(positions=[0, 1, 2]), TypeError, r"positions must be a torch.Tensor"),
    ("llama positions shape", lambda: _llama_step(positions=torch.arange(2)), ValueError,
     r"positions must have shape \(seq,\) or \(batch, seq\) with seq=3"),
    ("llama positions past 2**53", lambda: _llama_step(positions=torch.tensor([0, 1, 2 ** 62])), ValueError,
     r"positions must lie within \+-2\*\*53"),
    ("llama unrotated cache", lambda: _llama_step(cache=KVCache(2, rotated=False)), ValueError,
     r"cache must be a KVCache\(num_layers=2, rotated=True\)"),
    ("llama mask shape", lambda: _llama_step(mask=torch.ones(1, 2)), ValueError,
     r"attention_mask must have shape \(batch, seq\) = \(1, 3\)"),
]


@pytest.mark.parametrize("call,exc,pattern", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_input_is_refused_by_name(call, exc, pattern):
    with pytest.raises(exc, match=pattern):  # the message names the parameter and what was expected
        call()


def test_bad_input_changes_nothing():
    """A refused update leaves the cache as it was (checked before anything is stored)."""
    cache = _cached()
    held = cache.layers[0]
    before = {name: t.clone() for name, t in held._asdict().items() if t is not None}  # state: None, no tensor
    for bad in (torch.randn(1, 2, 1, 8, dtype=torch.float64), torch.randn(1, 2, 1, 6)):
        with pytest.raises(ValueError):
            _step(cache, k=bad)
    entry = cache.layers[0]
    assert entry is held and entry.state is None
    assert all(torch.equal(getattr(entry, name), t) for name, t in before.items())


def test_a_token_state_lives_in_its_entry():
    """The token state is the entry's last field, kept with the keys it belongs to; `states` only reads it."""
    cache = _cached_with_state()
    entry = cache.layers[0]
    assert entry.state["g"].shape == (1, 2, 3, 1) and entry.positions.tolist() == [[0, 1, 2]]
    got = cache.update(0, K[..., :1, :], K[..., :1, :], torch.tensor([3]), state={"g": K[..., :1, :1] + 1})
    entry = cache.layers[0]
    torch.testing.assert_close(entry.state["g"], torch.cat((K[..., :1], K[..., :1, :1] + 1), 2), atol=0, rtol=0)
    assert got.state["g"] is entry.state["g"] and cache.states == (entry.state,)
    with pytest.raises((TypeError, AttributeError)):
        cache.states[0] = None                                                   # a view: set it through layers
    assert _cached().layers[0].state is None and _cached().states == (None,)


def test_start_at_the_limit_is_exact():
    """The largest start allowed gives its last position at 2**53 exactly, not a wrapped negative one."""
    last = 2 ** 53 - 2
    positions = position_ids_from_mask(torch.ones(1, 3, dtype=LONG), torch.tensor([last]))
    assert positions.tolist() == [[last, last + 1, last + 2]] and positions.max() == 2 ** 53
