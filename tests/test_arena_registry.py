"""Every method of the arena's registry (experiments.arena_methods.ARENA_METHODS), iterated so that a method added
later is held to the same rules: it builds and runs one forward pass at the quick preset's sizes on the CPU and on
torch's `meta` device, its `make` refuses a config that is not an ExperimentConfig by naming `cfg`, and it is listed
in METHOD_TESTS with the tests that check its formula against a reference and its bad input (each of which must
exist). The package exports the class of every encoding and inference-time method."""
import ast
from functools import cache
from pathlib import Path

import pytest
import torch

import posenc_lib
from posenc_lib.arena.presets import arena_config
from posenc_lib.experiments.arena_methods import ARENA_METHODS, build_arena_model, use_inference_method
from posenc_lib.inference_time import LogNScaling, ReRoPE, SelfExtend
from posenc_lib.model import ENCODINGS
from posenc_lib.rope import RotaryEmbedding

TESTS = Path(__file__).parent
QUICK = arena_config("quick").protocol   # the sizes of `python -m posenc_lib.arena --preset quick`
TRAINING = [n for n, m in ARENA_METHODS.items() if m.kind == "training"]
INFERENCE = [n for n, m in ARENA_METHODS.items() if m.kind == "inference"]

_SCALING_BAD = ["test_scaling.py::test_bad_scaling_is_named",
                "test_scaling.py::test_extension_scaling_checks_its_settings"]
_POSITIONS_BAD = ["test_experiments_arena_methods.py::test_position_recipes_name_bad_input"]
_INFERENCE_BAD = ["test_inference_time.py::test_bad_input_is_named"]

#: method -> (tests of its formula against a reference, tests of its bad input), as "file::test"
METHOD_TESTS = {
    "nope": (["test_attention.py::test_nope_self_attention_is_permutation_equivariant_not_invariant",
              "test_attention.py::test_a_causal_mask_alone_breaks_equivariance"],
             ["test_attention.py::test_bad_input_is_named"]),
    "sinusoidal": (["test_absolute.py::test_table_matches_float64_formula",
                    "test_absolute.py::test_sinusoidal_encoding_adds_the_table_without_a_max_length"],
                   ["test_absolute.py::test_bad_input_is_named"]),
    "learned": (["test_absolute.py::test_learned_encoding_is_a_lookup"],
                ["test_absolute.py::test_bad_input_is_named",
                 "test_absolute.py::test_learned_wall_message_does_not_promise_that_relative_encodings_generalise"]),
    "t5": (["test_relative.py::test_buckets_equal_hf_t5_exactly",
            "test_relative.py::test_t5_bias_equals_hf_compute_bias"],
           ["test_relative.py::test_bad_input_is_named"]),
    "shaw": (["test_relative.py::test_shaw_matches_explicit_loops"], ["test_relative.py::test_bad_input_is_named"]),
    "rope": (["test_rope.py::test_apply_rope_matches_explicit_rotation",
              "test_rope.py::test_apply_rope_matches_hf_llama"],
             ["test_rope.py::test_bad_input_is_named"]),
    "alibi": (["test_alibi.py::test_slopes_match_hf_bloom", "test_alibi.py::test_bias_is_minus_slope_times_distance"],
              ["test_alibi.py::test_bad_input_is_named"]),
    "xpos": (["test_xpos.py::test_xpos_matches_a_per_element_reference",
              "test_xpos.py::test_scores_equal_torchscales_xpos"],
             ["test_xpos.py::test_bad_input_is_named"]),
    "kerple": (["test_relative_functions.py::test_kerple_matches_a_per_element_reference"],
               ["test_relative_functions.py::test_bad_input_is_named"]),
    "fire": (["test_relative_functions.py::test_fire_matches_a_per_element_reference"],
             ["test_relative_functions.py::test_bad_input_is_named"]),
    "cope": (["test_content.py::test_cope_matches_a_per_token_reference"],
             ["test_content.py::test_bad_input_is_refused_by_name"]),
    "fox": (["test_content.py::test_fox_matches_a_per_token_reference",
             "test_content.py::test_a_constant_forget_gate_is_alibi"],
            ["test_content.py::test_bad_input_is_refused_by_name"]),
    "path": (["test_content.py::test_path_matches_a_per_token_reference"],
             ["test_content.py::test_bad_input_is_refused_by_name"]),
    **{f"partial_rope_{label}": (["test_rope.py::test_partial_rotary_matches_hf_gpt_neox_and_phi",
                                  "test_experiments_arena_methods.py::test_partial_rope_rotates_that_fraction"],
                                 ["test_experiments_arena_methods.py::test_partial_rope_rotates_that_fraction",
                                  "test_rope.py::test_bad_input_is_named"])
       for label in ("1_8", "1_4", "1_2")},
    "rope_nope_hybrid": (["test_experiments_arena_methods.py::test_hybrid_puts_nope_on_every_kth_block"],
                         ["test_experiments_arena_methods.py::test_hybrid_puts_nope_on_every_kth_block"]),
    "randomized_positions": (["test_experiments_arena_methods.py::"
                              "test_randomized_positions_are_sorted_distinct_and_cover_the_range"], _POSITIONS_BAD),
    "pose": (["test_experiments_arena_methods.py::test_pose_positions_follow_the_authors_draws"], _POSITIONS_BAD),
    "scaling_linear": (["test_scaling.py::test_linear_matches_hf"], _SCALING_BAD),
    "scaling_ntk": (["test_scaling.py::test_ntk_is_the_base_change_formula",
                     "test_scaling.py::test_ntk_equals_hf_dynamic_where_they_coincide"], _SCALING_BAD),
    "scaling_dynamic": (["test_scaling.py::test_dynamic_matches_hf"], _SCALING_BAD),
    "scaling_yarn": (["test_scaling.py::test_yarn_matches_hf_including_attention_factor"], _SCALING_BAD),
    "scaling_llama3": (["test_scaling.py::test_llama3_matches_hf"], _SCALING_BAD),
    "rerope": (["test_inference_time.py::test_rerope_matches_its_distances"], _INFERENCE_BAD),
    "rerope_log_n": (["test_inference_time.py::test_log_n_option_of_rerope_scales_its_rows"], _INFERENCE_BAD),
    "leaky_rerope": (["test_inference_time.py::test_rerope_matches_its_distances",
                      "test_experiments_arena_methods.py::test_inference_windows_keep_distances_inside_the_training_length"],
                     _INFERENCE_BAD),
    "self_extend": (["test_inference_time.py::test_self_extend_matches_the_authors_positions",
                     "test_inference_time.py::test_self_extend_meets_rope_at_the_window_edge"], _INFERENCE_BAD),
    "log_n": (["test_inference_time.py::test_log_n_scales_rows_past_the_training_length"], _INFERENCE_BAD),
}


@cache
def _test_functions(file: str) -> set:
    tree = ast.parse((TESTS / file).read_text(encoding="utf-8"))
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


def test_every_method_names_its_reference_and_bad_input_tests_and_they_exist():
    assert set(METHOD_TESTS) == set(ARENA_METHODS), (
        f"methods without a METHOD_TESTS entry: {sorted(set(ARENA_METHODS) - set(METHOD_TESTS))}; "
        f"entries of no method: {sorted(set(METHOD_TESTS) - set(ARENA_METHODS))}")
    for name, (reference, bad_input) in METHOD_TESTS.items():
        assert reference and bad_input, name
        for test in reference + bad_input:
            file, function = test.split("::")
            assert function in _test_functions(file), f"{name}: {test} does not exist"


def _rope_model(device: str):
    model, _ = build_arena_model("rope", QUICK, seed=0)
    return model.to(device).eval()


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("name", TRAINING)
def test_every_training_method_builds_and_runs_at_the_quick_size(name, device):
    model, sampler = build_arena_model(name, QUICK, seed=0)
    model.to(device)
    ids = torch.randint(0, 100, (2, QUICK.train_len)).to(device)
    positions = None if sampler is None else sampler(ids)
    logits, loss = model(ids, ids, positions)
    assert logits.shape == (2, QUICK.train_len, model.config.vocab_size) and logits.device.type == device
    if device == "cpu":
        assert torch.isfinite(loss)


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("name", INFERENCE)
def test_every_inference_method_runs_on_the_rope_model_at_the_quick_size(name, device):
    model = _rope_model(device)
    longest = max(QUICK.eval_multiples)
    ids = torch.randint(0, 100, (1, longest * QUICK.train_len)).to(device)
    previous = use_inference_method(name, model, QUICK, float(longest))
    with torch.no_grad():
        logits, _ = model(ids)
    model.replace_encoding(previous)
    assert logits.shape == (1, longest * QUICK.train_len, model.config.vocab_size) and logits.device.type == device
    if device == "cpu":
        assert torch.isfinite(logits).all()


@pytest.mark.parametrize("name", list(ARENA_METHODS))
def test_every_make_refuses_a_config_that_is_not_one_by_naming_cfg(name):
    method = ARENA_METHODS[name]
    with pytest.raises(TypeError, match="cfg must be an ExperimentConfig, got str"):
        if method.kind == "training":
            method.make("quick", 0)
        else:
            method.make(RotaryEmbedding(QUICK.d_model // QUICK.num_heads), "quick", 2.0)
    with pytest.raises(TypeError, match="cfg must be an ExperimentConfig, got dict"):
        if method.kind == "training":
            build_arena_model(name, {"train_len": 64}, 0)
        else:
            use_inference_method(name, _rope_model("cpu"), {"train_len": 64}, 2.0)


def test_the_package_exports_every_encoding_and_inference_time_class():
    for cls in [*ENCODINGS.values(), ReRoPE, SelfExtend, LogNScaling]:
        assert getattr(posenc_lib, cls.__name__, None) is cls and cls.__name__ in posenc_lib.__all__, cls.__name__
