"""posenc_lib.inference's decode loop against transformers' own generate(), one tiny seeded model per family.

Every record of DECODE_FAMILIES: a left-padded batch of three prompts, greedy generate() of 8 new tokens with
its DynamicCache, against `greedy_decode` (posenc_lib's positions, cache, rotation, windows and attention on
the model's weights): the same tokens, logits within 1e-4. The window is 3 tokens, so every prompt crosses
it at the prefill and every step runs past it. Classes outside the table are refused by name; so are the
configs of a family the loop does not reproduce, packed rows and the sink cache."""
import inspect

import pytest
import torch

from posenc_lib.configs import from_hf_config
from posenc_lib.inference import (
    DECODE_FAMILIES,
    KVCache,
    SinkWindowCache,
    batch_mates_gap,
    cache_mask_bias,
    decode_families_text,
    decode_family,
    decode_step,
    greedy_decode,
    llama_decode_step,
    packed_row_gaps,
)

transformers = pytest.importorskip("transformers")

WINDOW = 3
_SIZES = dict(vocab_size=50, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, initializer_range=0.2, pad_token_id=0, bos_token_id=1, eos_token_id=None)

# per family: the config class and what turns its windows and norms on (two layers, one of each kind where
# the family alternates; the window of 3 crossed by every prompt)
_CONFIGS = {
    "LlamaForCausalLM": ("LlamaConfig", {}),
    "MistralForCausalLM": ("MistralConfig", {"sliding_window": WINDOW}),
    "Qwen2ForCausalLM": ("Qwen2Config", {"use_sliding_window": True, "sliding_window": WINDOW, "max_window_layers": 1,
                                          "attention_bias": True}),
    "Qwen3ForCausalLM": ("Qwen3Config", {"use_sliding_window": True, "sliding_window": WINDOW, "max_window_layers": 1,
                                          "head_dim": 8}),
    "Phi3ForCausalLM": ("Phi3Config", {"sliding_window": WINDOW}),
    "Olmo2ForCausalLM": ("Olmo2Config", {}),
    "Gemma3ForCausalLM": ("Gemma3TextConfig", {"sliding_window": WINDOW, "head_dim": 8, "query_pre_attn_scalar": 16,
                                               "layer_types": ["sliding_attention", "full_attention"]}),
}


# which of the two layers slide, as each family's modeling code decides from the config above
_SLIDING = {"LlamaForCausalLM": [False, False], "MistralForCausalLM": [True, True], "Qwen2ForCausalLM": [False, True],
            "Qwen3ForCausalLM": [False, True], "Phi3ForCausalLM": [True, True], "Olmo2ForCausalLM": [False, False],
            "Gemma3ForCausalLM": [True, False]}


def _model(model_class, seed=0, **overrides):
    config_class, settings = _CONFIGS[model_class]
    config = getattr(transformers, config_class)(**{**_SIZES, **settings, **overrides})
    torch.manual_seed(seed)
    return getattr(transformers, model_class)(config).eval()


def _prompts():
    """Three prompts of 7, 5 and 2 tokens, left-padded to 7 (pad id 0)."""
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(2, 50, (3, 7), generator=gen)
    mask = torch.tensor([[1] * 7, [0, 0] + [1] * 5, [0] * 5 + [1] * 2])
    return ids.masked_fill(mask == 0, 0), mask


def _generate(model, ids, mask, new=8):
    """transformers' greedy generate(): (new tokens (B, new), their logits (B, new, vocab))."""
    out = model.generate(ids, attention_mask=mask, max_new_tokens=new, min_new_tokens=new, do_sample=False,
                         output_logits=True, return_dict_in_generate=True)
    return out.sequences[:, ids.shape[1]:], torch.stack(out.logits, 1)


def test_the_table_covers_the_test_and_the_docstring_lists_the_table():
    assert sorted(_CONFIGS) == sorted(f.model_class for f in DECODE_FAMILIES)
    doc = inspect.cleandoc(llama_decode_step.__doc__)
    assert decode_families_text() in doc, "llama_decode_step's docstring must list decode_families_text()"


@pytest.mark.parametrize("model_class", sorted(_CONFIGS))
def test_every_family_equals_its_own_generate(model_class):
    model = _model(model_class)
    ids, mask = _prompts()
    with torch.no_grad():
        their_tokens, theirs = _generate(model, ids, mask)
        tokens, logits = greedy_decode(model, ids, 8, attention_mask=mask)
    assert torch.equal(tokens, their_tokens), model_class
    torch.testing.assert_close(logits, theirs, atol=1e-4, rtol=0)
    # the tokens are not trivially constant, and the layers slide where the family's code says
    assert len(set(tokens.flatten().tolist())) > 2
    sliding = [layer.attention == "sliding" for layer in from_hf_config(model.config.to_dict()).layers]
    assert sliding == _SLIDING[model_class]


@pytest.mark.parametrize("model_class, rope", [
    ("LlamaForCausalLM", {"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0}),
    ("LlamaForCausalLM", {"rope_type": "yarn", "factor": 4.0, "rope_theta": 10000.0,
                          "original_max_position_embeddings": 8}),
    ("LlamaForCausalLM", {"rope_type": "llama3", "factor": 8.0, "rope_theta": 10000.0, "low_freq_factor": 1.0,
                          "high_freq_factor": 4.0, "original_max_position_embeddings": 8}),
    ("Phi3ForCausalLM", {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5})])
def test_static_scalings_and_partial_rotary_equal_generate(model_class, rope):
    """The rotations the loop reads from the config (from_hf_config) beyond the default: the same tokens and logits."""
    model = _model(model_class, rope_parameters=rope)
    ids, mask = _prompts()
    with torch.no_grad():
        their_tokens, theirs = _generate(model, ids, mask)
        tokens, logits = greedy_decode(model, ids, 8, attention_mask=mask)
    assert torch.equal(tokens, their_tokens)
    torch.testing.assert_close(logits, theirs, atol=1e-4, rtol=0)


@pytest.mark.parametrize("model_class", ["MistralForCausalLM", "Qwen3ForCausalLM", "Gemma3ForCausalLM"])
def test_the_check_can_fail_without_the_window(model_class):
    """The same loop with every window taken away (full attention) differs from generate() past the window."""
    model = _model(model_class)
    ids, mask = _prompts()
    with torch.no_grad():
        _, theirs = _generate(model, ids, mask)
        wide = _model(model_class, sliding_window=64)
        if model_class == "Qwen3ForCausalLM":
            wide = _model(model_class, use_sliding_window=False)
        _, logits = greedy_decode(wide, ids, 8, attention_mask=mask)
    assert (logits[:, 0] - theirs[:, 0]).abs().max() > 1e-3


def test_the_q_k_norm_weights_are_used():
    """Qwen3's k_norm weights scaled: the loop's logits move, and still equal the model's own forward."""
    ids, mask = _prompts()
    model = _model("Qwen3ForCausalLM")
    with torch.no_grad():
        before = greedy_decode(model, ids, 1, attention_mask=mask)[1]
        model.model.layers[0].self_attn.k_norm.weight.mul_(3.0)
        after = greedy_decode(model, ids, 1, attention_mask=mask)[1]
        theirs = model(ids, attention_mask=mask).logits[:, -1]
    assert (after - before).abs().max() > 1e-3
    torch.testing.assert_close(after[:, 0], theirs, atol=1e-4, rtol=0)


def test_the_window_mask_is_transformers_own():
    """cache_mask_bias's window, slot by slot, equals masking_utils' sliding-window causal mask with a padding
    mask, at the prefill (T queries) and at a later step (1 query over the cache)."""
    from transformers.masking_utils import and_masks, padding_mask_function, sliding_window_causal_mask_function
    valid = torch.tensor([[True] * 9, [False] * 4 + [True] * 5])
    rule = and_masks(sliding_window_causal_mask_function(WINDOW), padding_mask_function(valid))
    for q_len in (9, 1):
        ours = cache_mask_bias(valid, q_len, torch.float32, window=WINDOW)[:, 0] == 0          # (B, Tq, Tk)
        for b in range(2):
            for qi, q in enumerate(range(9 - q_len, 9)):
                if not valid[b, q]:
                    continue                                          # a pad query's row is unused
                theirs = [bool(rule(*map(torch.tensor, (b, 0, q, k)))) for k in range(9)]
                assert ours[b, qi].tolist() == theirs, (b, q)


def test_tinylm_window_one_layer_equals_the_window_alone():
    """decode_step with a window on a one-layer TinyLM: the last token's logits equal a forward over only the
    last `window` tokens (one layer: a query sees nothing else); without the window they do not."""
    from posenc_lib import TinyLM
    torch.manual_seed(0)
    model = TinyLM(23, encoding="rope", d_model=32, num_heads=4, num_layers=1).eval()
    ids = torch.randint(0, 23, (1, 10), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        cache = KVCache(1)
        decode_step(model, ids[:, :6], cache, window=4)
        steps = [decode_step(model, ids[:, t:t + 1], cache, window=4)[:, -1] for t in range(6, 10)]
        alone = model(ids[:, 6:])[0][:, -1]
        full = decode_step(model, ids, KVCache(1))[:, -1]
    torch.testing.assert_close(steps[-1], alone, atol=2e-6, rtol=0)
    assert (full - alone).abs().max() > 1e-3


# ------------------------------------------------------------------ refused by name
def _tiny_outside(name):
    """A tiny model of a class outside the table (built from a small config: no download, no large model)."""
    small = dict(vocab_size=50, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
                 num_key_value_heads=2)
    configs = {"Gemma2ForCausalLM": ("Gemma2Config", {**small, "head_dim": 8}),
               "CohereForCausalLM": ("CohereConfig", small),
               "Starcoder2ForCausalLM": ("Starcoder2Config", small),
               "GraniteForCausalLM": ("GraniteConfig", small),
               "GPTNeoXForCausalLM": ("GPTNeoXConfig", {"vocab_size": 50, "hidden_size": 32, "num_hidden_layers": 1,
                                                         "num_attention_heads": 4, "intermediate_size": 64}),
               "GPT2LMHeadModel": ("GPT2Config", {"vocab_size": 50, "n_embd": 32, "n_layer": 1, "n_head": 4})}
    config_class, settings = configs[name]
    return getattr(transformers, name)(getattr(transformers, config_class)(**settings)).eval()


@pytest.mark.parametrize("name", ["Gemma2ForCausalLM", "CohereForCausalLM", "Starcoder2ForCausalLM",
                                  "GraniteForCausalLM", "GPTNeoXForCausalLM", "GPT2LMHeadModel"])
def test_a_class_outside_the_table_is_refused_by_name(name):
    model = _tiny_outside(name)
    with pytest.raises(ValueError, match=f"model: {name} is not in llama_decode_step's table"):
        llama_decode_step(model, torch.ones(1, 2, dtype=torch.long), KVCache(1), torch.arange(2))


def test_a_subclass_is_refused():
    class Mine(transformers.LlamaForCausalLM):
        pass
    with pytest.raises(ValueError, match="model: Mine is not in llama_decode_step's table"):
        decode_family(Mine(transformers.LlamaConfig(**_SIZES)))


@pytest.mark.parametrize("model_class, overrides, named", [
    ("Gemma3ForCausalLM", {"final_logit_softcapping": 30.0}, "final_logit_softcapping"),
    ("Gemma3ForCausalLM", {"attn_logit_softcapping": 50.0}, "attn_logit_softcapping"),
    ("LlamaForCausalLM", {"rope_parameters": {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0}},
     "rope_type 'dynamic'"),
])
def test_a_config_the_loop_does_not_reproduce_is_refused(model_class, overrides, named):
    model = _model(model_class, **overrides)
    with pytest.raises(ValueError, match=f"model: {model_class} .*{named}"):
        llama_decode_step(model, torch.ones(1, 2, dtype=torch.long), KVCache(2), torch.arange(2))


def test_packed_rows_and_the_sink_cache_are_refused():
    model = _model("LlamaForCausalLM")
    packed = torch.tensor([0, 1, 2, 0, 1])                            # two documents in one row
    with pytest.raises(ValueError, match="positions must increase along a row: row 0 goes back to 0 at slot 3"):
        llama_decode_step(model, torch.ones(1, 5, dtype=torch.long), KVCache(2), packed)
    with pytest.raises(ValueError, match="cache: a SinkWindowCache"):
        llama_decode_step(model, torch.ones(1, 2, dtype=torch.long), SinkWindowCache(2), torch.arange(2))
    from posenc_lib import TinyLM
    tiny = TinyLM(23, d_model=32, num_heads=4, num_layers=1)
    with pytest.raises(ValueError, match="window: a SinkWindowCache"):
        decode_step(tiny, torch.ones(1, 2, dtype=torch.long), SinkWindowCache(1), window=2)
    with pytest.raises(ValueError, match="positions must increase along a row"):
        decode_step(tiny, torch.ones(1, 5, dtype=torch.long), KVCache(1), positions=packed)
    # a left-padded row is not a packed one: its pads (position 0) are not real tokens
    decode_step(tiny, torch.ones(2, 5, dtype=torch.long), KVCache(1),
                attention_mask=torch.tensor([[1] * 5, [0, 0, 1, 1, 1]]))


# ------------------------------------------------------------------ notebook 12's two measurements of transformers
def _documents():
    return [torch.randint(2, 50, (n,), generator=torch.Generator().manual_seed(20 + i))
            for i, n in enumerate((5, 4, 3))]


def test_transformers_keeps_packed_documents_apart_only_without_cache_and_mask():
    """The rule in its code (masking_utils._preprocess_mask_arguments), use_cache's default from the config, and
    the leak measured: documents 2 and 3 of a packed row see document 1 unless use_cache=False and no mask."""
    from transformers import masking_utils
    rule = inspect.getsource(masking_utils._preprocess_mask_arguments)
    assert "if position_ids is not None and attention_mask is None and cache is None:" in rule
    model = _model("LlamaForCausalLM")
    assert model.config.use_cache is True
    mate = torch.randint(2, 50, (8,), generator=torch.Generator().manual_seed(30))
    with torch.no_grad():
        inferred = packed_row_gaps(model, _documents(), use_cache=False)
        default = packed_row_gaps(model, _documents())
        padded = packed_row_gaps(model, _documents(), use_cache=False, batch_mate=mate)
    assert max(inferred) < 1e-5
    for gaps in (default, padded):
        assert gaps[0] < 1e-5 and min(gaps[1:]) > 1e-2     # the first document has nothing before it to see


@pytest.mark.parametrize("rope, moves", [
    ({"rope_type": "default", "rope_theta": 10000.0}, False),
    ({"rope_type": "dynamic", "factor": 4.0, "rope_theta": 10000.0}, True),
    ({"rope_type": "longrope", "rope_theta": 10000.0, "original_max_position_embeddings": 8, "factor": 4.0,
      "short_factor": [1.0] * 4, "long_factor": [1.0, 2.0, 4.0, 8.0]}, True)])
def test_a_length_dependent_scaling_takes_the_batchs_largest_position(rope, moves):
    """A 5-token prompt beside a 20-token one (trained length 8) is rotated with the batch's frequencies
    (dynamic_rope_update: seq_len = max(position_ids) + 1, over the batch); beside an 8-token one it is not."""
    from transformers import modeling_rope_utils
    rule = inspect.getsource(modeling_rope_utils.dynamic_rope_update)
    assert rule.count("seq_len = torch.max(position_ids) + 1") == 2                 # LongRoPE's and dynamic's
    model = _model("LlamaForCausalLM", max_position_embeddings=8, rope_parameters=rope)
    gen = torch.Generator().manual_seed(40)
    short, long = torch.randint(2, 50, (5,), generator=gen), torch.randint(2, 50, (20,), generator=gen)
    with torch.no_grad():
        beside_long, beside_l0 = batch_mates_gap(model, short, long), batch_mates_gap(model, short, long[:8])
    assert beside_l0 < 1e-5
    assert (beside_long > 1e-3) if moves else (beside_long < 1e-5)


def test_a_windowed_decode_compiles_as_one_graph():
    """decode_step with a window: a padded prefill and a step trace as one graph and give the eager logits."""
    from posenc_lib import TinyLM
    torch.manual_seed(0)
    model = TinyLM(23, d_model=32, num_heads=4, num_layers=2).eval()
    ids = torch.randint(0, 23, (2, 6), generator=torch.Generator().manual_seed(3))
    mask = torch.tensor([[1] * 5, [0, 0, 1, 1, 1]])

    def run(ids, mask):
        cache = KVCache(2)
        return torch.cat((decode_step(model, ids[:, :5], cache, attention_mask=mask, window=WINDOW),
                          decode_step(model, ids[:, 5:], cache, window=WINDOW)), 1)

    torch._dynamo.reset()
    compiled = torch.compile(run, fullgraph=True, backend="eager")
    with torch.no_grad():
        torch.testing.assert_close(compiled(ids, mask), run(ids, mask), atol=0, rtol=0)
