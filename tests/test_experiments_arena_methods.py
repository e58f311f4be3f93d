"""The arena's training position recipes (experiments.positions), fit's position_sampler, and the registry of arena
methods (experiments.arena_methods): every method builds, the hybrid and partial RoPE are what they say, every
inference method goes on a trained RoPE model and comes off again."""
import pytest
import torch

from posenc_lib.attention import NoPE
from posenc_lib.experiments.arena_methods import (
    ARENA_METHODS,
    ArenaMethod,
    build_arena_model,
    hybrid_model,
    partial_rope_model,
    register_arena_method,
    use_inference_method,
)
from posenc_lib.experiments.config import ExperimentConfig
from posenc_lib.experiments.positions import pose_positions, randomized_positions
from posenc_lib.experiments.training import fit
from posenc_lib.model import ENCODINGS
from posenc_lib.rope import RotaryEmbedding

ARENA = ExperimentConfig(train_len=16, d_model=64, num_heads=2, num_layers=2, eval_multiples=(1, 2, 4))


# ------------------------------------------------------------------------------------------- position recipes
def test_randomized_positions_are_sorted_distinct_and_cover_the_range():
    sample = randomized_positions(40, seed=3)
    inputs = torch.zeros(64, 10, dtype=torch.long)
    got = torch.cat([sample(inputs) for _ in range(20)])
    assert got.shape == (1280, 10) and got.dtype == torch.int64
    assert bool((got[:, 1:] > got[:, :-1]).all()) and int(got.min()) >= 0 and int(got.max()) < 40
    counts = torch.bincount(got.flatten(), minlength=40).double()  # each of 40 positions chosen with p = 10/40
    assert float(counts.min()) > 0.8 * counts.mean() and float(counts.max()) < 1.2 * counts.mean()
    again = randomized_positions(40, seed=3)(inputs)
    assert torch.equal(again, got[:64])  # seeded: the same positions for the same seed


def test_pose_positions_follow_the_authors_draws():
    """0 .. l1 - 1, then l1 + u .. L - 1 + u, l1 in 1 .. (L + 1) // 2, u in 0 .. target - L; each value drawn."""
    L, target = 9, 40
    got = pose_positions(target, seed=0)(torch.zeros(4000, L, dtype=torch.long))
    steps = got[:, 1:] - got[:, :-1]
    jumps = steps > 1
    assert bool((steps >= 1).all()) and int(jumps.sum(1).max()) <= 1
    l1 = torch.where(jumps.any(1), jumps.int().argmax(1) + 1, -1)
    skip = got[:, -1] - (L - 1)
    assert int(got[:, 0].max()) == 0 and int(got.max()) == target - 1
    assert set(skip.tolist()) == set(range(target - L + 1))
    assert set(l1[skip > 0].tolist()) == set(range(1, (L + 1) // 2 + 1))
    assert torch.equal(pose_positions(L, seed=0)(torch.zeros(3, L, dtype=torch.long)), torch.arange(L).expand(3, L))


def test_fit_gives_the_model_the_sampled_positions():
    seen = []

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(1))

        def forward(self, inputs, targets, positions=None):
            seen.append(positions)
            return None, (self.w * inputs.float()).sum()

    batch = (torch.zeros(2, 5, dtype=torch.long), torch.zeros(2, 5, dtype=torch.long))
    fit(Model(), lambda: batch, steps=2, lr=0.1, weight_decay=0.0)
    fit(Model(), lambda: batch, steps=1, lr=0.1, weight_decay=0.0, position_sampler=randomized_positions(9))
    assert seen[:2] == [None, None] and seen[2].shape == (2, 5)
    with pytest.raises(TypeError, match="position_sampler must be a function"):
        fit(Model(), lambda: batch, steps=1, lr=0.1, weight_decay=0.0, position_sampler=3)


def test_train_passes_the_sampler_on_and_pose_trains_a_rope_model():
    """train(..., position_sampler=) reaches fit: a PoSE-trained model's loss falls as the plain one's does, and the
    two differ (the positions were used)."""
    from posenc_lib.experiments.training import train
    data = torch.arange(400) % 7
    curves = {}
    for name in ("rope", "pose"):
        model, sampler = build_arena_model(name, ARENA, seed=0)
        curves[name] = train(model, data, seq_len=16, steps=30, batch_size=8, lr=1e-2, seed=0, warmup=5,
                             log_every=10, position_sampler=sampler)
    assert curves["pose"][-1][1] < curves["pose"][0][1] and curves["pose"] != curves["rope"]


@pytest.mark.parametrize("call, error, message", [
    (lambda: randomized_positions(0), ValueError, "max_pos must be >= 1"),
    (lambda: randomized_positions(4)(torch.zeros(1, 5, dtype=torch.long)), ValueError, "max_pos >= seq"),
    (lambda: pose_positions(4)(torch.zeros(1, 5, dtype=torch.long)), ValueError, "target_len >= seq"),
    (lambda: pose_positions(8, seed=-1), ValueError, "seed must be >= 0"),
    (lambda: pose_positions(8)(torch.zeros(5, dtype=torch.long)), ValueError, "inputs must have shape"),
    (lambda: pose_positions(8)(torch.zeros(1, 5)), TypeError, "inputs must be an integer tensor"),
])
def test_position_recipes_name_bad_input(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_sampled_positions_are_on_the_inputs_device():
    inputs = torch.zeros(2, 5, dtype=torch.long, device="meta")
    assert randomized_positions(9)(inputs).device.type == "meta" and pose_positions(9)(inputs).device.type == "meta"


# --------------------------------------------------------------------------------------------------- registry
def test_registry_holds_every_encoding_and_the_issues_recipes():
    names = set(ARENA_METHODS)
    assert set(ENCODINGS) <= names
    assert {"partial_rope_1_8", "partial_rope_1_4", "partial_rope_1_2", "rope_nope_hybrid", "randomized_positions",
            "pose", "rerope", "leaky_rerope", "self_extend", "log_n", "scaling_linear", "scaling_ntk",
            "scaling_dynamic", "scaling_yarn"} <= names
    for method in ARENA_METHODS.values():
        assert method.paper and (method.kind == "training") == (method.base is None), method.name


@pytest.mark.parametrize("name", [n for n, m in ARENA_METHODS.items() if m.kind == "training"])
def test_every_training_method_builds_and_runs(name):
    model, sampler = build_arena_model(name, ARENA, seed=0)
    ids = torch.randint(0, 100, (2, ARENA.train_len))
    positions = None if sampler is None else sampler(ids)
    _, loss = model(ids, ids, positions)
    assert torch.isfinite(loss)


def test_same_seed_same_shared_weights_across_methods():
    a, _ = build_arena_model("rope", ARENA, seed=1)
    b, _ = build_arena_model("pose", ARENA, seed=1)
    c, _ = build_arena_model("partial_rope_1_4", ARENA, seed=1)
    for x, y in ((a, b), (a, c)):
        assert all(torch.equal(p, q) for p, q in zip(x.parameters(), y.parameters()))


def test_hybrid_puts_nope_on_every_kth_block():
    cfg = ExperimentConfig(train_len=16, d_model=64, num_heads=2, num_layers=4)
    model = hybrid_model(cfg, 0, interval=2)
    kinds = [type(block.attn.encoding).__name__ for block in model.blocks]
    assert kinds == ["RotaryEmbedding", "NoPE", "RotaryEmbedding", "NoPE"]
    assert model.blocks[0].attn.encoding is model.blocks[2].attn.encoding is model.encoding
    assert isinstance(hybrid_model(cfg, 0, interval=4).blocks[3].attn.encoding, NoPE)
    with pytest.raises(ValueError, match="interval must be <= num_layers=4"):
        hybrid_model(cfg, 0, interval=5)


@pytest.mark.parametrize("label, fraction", [("1_8", 1 / 8), ("1_4", 1 / 4), ("1_2", 1 / 2)])
def test_partial_rope_rotates_that_fraction(label, fraction):
    model, _ = build_arena_model(f"partial_rope_{label}", ARENA, seed=0)
    assert model.encoding.rotary_dim == int(32 * fraction) and model.encoding.dim == 32
    with pytest.raises(ValueError, match="head_dim = d_model / num_heads >= 32"):
        partial_rope_model(fraction, ExperimentConfig(), 0)


@pytest.mark.parametrize("name", [n for n, m in ARENA_METHODS.items() if m.kind == "inference"])
def test_every_inference_method_goes_on_and_off_a_trained_rope_model(name):
    model, _ = build_arena_model("rope", ARENA, seed=0)
    model.eval()
    ids = torch.randint(0, 100, (1, 4 * ARENA.train_len))
    with torch.no_grad():
        plain, _ = model(ids)
        previous = use_inference_method(name, model, ARENA, 4.0)
        changed, _ = model(ids)
        model.replace_encoding(previous)
        again, _ = model(ids)
    assert torch.equal(again, plain) and torch.isfinite(changed).all()
    assert (changed - plain).abs().max() > 1e-4, name  # each method changes a window of 4L


def test_inference_windows_keep_distances_inside_the_training_length():
    """Leaky ReRoPE's k and Self-Extend's G: the largest distance of a window of factor * L reads < L."""
    rope = RotaryEmbedding(32)
    for factor in (2.0, 4.0, 8.0):
        longest = int(factor * ARENA.train_len) - 1
        leaky = ARENA_METHODS["leaky_rerope"].make(rope, ARENA, factor)
        assert leaky.window + (longest - leaky.window) / leaky.k <= ARENA.train_len - 1
        extend = ARENA_METHODS["self_extend"].make(rope, ARENA, factor)
        w, g = extend.window, extend.group
        assert max(longest // g + w - w // g - j // g for j in range(longest - w + 1)) <= ARENA.train_len - 1
        if leaky.k > 2:  # the smallest such k: one less reads the longest distance at L or beyond
            assert leaky.window + (longest - leaky.window) / (leaky.k - 1) > ARENA.train_len - 1


def test_use_inference_method_refuses_what_it_cannot_change():
    hybrid = hybrid_model(ARENA, 0)
    with pytest.raises(ValueError, match="plain RoPE in every block"):
        use_inference_method("rerope", hybrid, ARENA, 2.0)
    alibi, _ = build_arena_model("alibi", ARENA, 0)
    with pytest.raises(ValueError, match="plain RoPE in every block"):
        use_inference_method("scaling_yarn", alibi, ARENA, 2.0)
    rope, _ = build_arena_model("rope", ARENA, 0)
    with pytest.raises(ValueError, match="is a training method"):
        use_inference_method("pose", rope, ARENA, 2.0)
    with pytest.raises(ValueError, match="factor must be >= 1.0"):
        use_inference_method("rerope", rope, ARENA, 0.5)
    with pytest.raises(ValueError, match="is an inference method"):
        build_arena_model("rerope", ARENA, 0)
    with pytest.raises(ValueError, match="method must be one of"):
        build_arena_model("rope2", ARENA, 0)


def test_register_arena_method_checks_its_record():
    with pytest.raises(ValueError, match="kind must be one of"):
        ArenaMethod("x", "both", "p", lambda cfg, seed: None)
    with pytest.raises(ValueError, match="needs base="):
        ArenaMethod("x", "inference", "p", lambda rope, cfg, factor: rope)
    with pytest.raises(ValueError, match="already an arena method"):
        register_arena_method(ArenaMethod("rope", "training", "p", lambda cfg, seed: None))
    with pytest.raises(ValueError, match="base must name a training method"):
        register_arena_method(ArenaMethod("y", "inference", "p", lambda rope, cfg, factor: rope, base="nothing"))
