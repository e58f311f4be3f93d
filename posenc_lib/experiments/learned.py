"""Notebook 04's experiment: a TinyLM learns its absolute position table on a task where order matters.

Task ("copy the token `lag` places back"): tokens are uniform random over `vocab_size` symbols; the
target at position t is the token at position t - lag, and the first `lag` positions have no target
(-100, which `F.cross_entropy` ignores). Token identity carries no information about *where* the
answer is, so the model can only solve it by knowing positions: with a learned table, the rows it
learns are the model's notion of "where".

`train_position_demo` trains the model with the experiments' one AdamW loop (`training.fit`; seeded,
on one CPU thread so that a run is reproducible bit for bit on one machine and very closely across
machines) and records the table every `every` steps. `make_learned_snapshots()` runs it with
`SNAPSHOT_CONFIG` and writes data/learned_snapshots.npz (the tables) and data/learned_snapshots.json
(config and provenance); notebook 04's checkpoint slider loads them with `load_learned_snapshots()`.

Also for notebook 04: `attention_logits` (a layer's pre-softmax scores, which the notebook averages over
random sequences to get the position-only logits), and the two ways practice extends a trained table:
`extend_by_copying` (Longformer) and `interpolate_grid` (ViT).
"""
from __future__ import annotations

import contextlib
import datetime
import json
import platform
from pathlib import Path

import numpy as np
import torch

from .. import _checks
from .._version import __version__
from ..model import TinyLM
from .paths import data_dir, data_file
from .training import fit, seeded_tinylm

SNAPSHOT_STEM = "learned_snapshots"
MAKE_SNAPSHOTS = ("run posenc_lib.experiments.learned.make_learned_snapshots() "
                  "(python -m posenc_lib.experiments --learned-snapshots) to make it, about 5 s on a CPU")

# The one configuration the shipped snapshots were made with (notebook 04 trains the same one live).
SNAPSHOT_CONFIG = dict(encoding="learned", vocab_size=16, seq_len=32, lag=1, d_model=32, num_heads=2, num_layers=1,
                       batch_size=32, lr=3e-3, weight_decay=0.1, steps=240, every=20, seed=0)


def lag_copy_batch(batch_size: int, seq_len: int, vocab_size: int, lag: int = 1, *,
                   generator: torch.Generator | None = None, device=None):
    """(tokens, targets), both (batch_size, seq_len) int64: targets[:, t] = tokens[:, t - lag], -100 for t < lag."""
    batch_size = _checks.positive_int("batch_size", batch_size)
    seq_len = _checks.positive_int("seq_len", seq_len)
    vocab_size = _checks.positive_int("vocab_size", vocab_size)
    lag = _checks.positive_int("lag", lag)
    if lag >= seq_len:
        raise ValueError(f"lag must be < seq_len (some position needs a target), got lag={lag}, seq_len={seq_len}")
    device = torch.device(device if device is not None else "cpu")
    tokens = torch.randint(0, vocab_size, (batch_size, seq_len), generator=generator, device=device)
    targets = torch.full_like(tokens, -100)
    targets[:, lag:] = tokens[:, :-lag]
    return tokens, targets


@torch.no_grad()
def per_position_accuracy(model: TinyLM, tokens: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """(seq,) fraction of correct argmax predictions at each position (nan where no position has a target)."""
    logits, _ = model(tokens)
    valid = targets != -100
    correct = (logits.argmax(-1) == targets) & valid
    return correct.sum(0).double() / valid.sum(0).double()  # 0/0 = nan where no target


@torch.no_grad()
def attention_logits(model: TinyLM, tokens: torch.Tensor, *, layer: int = 0) -> torch.Tensor:
    """(B, H, T, T) pre-softmax scores q_t . k_s / sqrt(head_dim) (plus the encoding's score bias, if any) of
    block `layer` of `model` on `tokens` (B, T), before the causal mask: what the softmax of that layer
    sees. softmax over s <= t of these equals the layer's attention weights (tests check it).

    Notebook 04 averages them over random sequences: in its task the tokens are independent of their
    positions, so the average keeps the part of the logits that depends on (t, s) alone."""
    tokens = _checks.int_tensor("tokens", tokens).long()
    if tokens.dim() != 2:
        raise ValueError(f"tokens must have shape (batch, seq), got {tuple(tokens.shape)}")
    if not 0 <= layer < len(model.blocks):
        raise ValueError(f"layer must be in [0, {len(model.blocks)}), got {layer}")
    B, T = tokens.shape
    positions = torch.arange(T, device=tokens.device)
    x = model.encoding.add_to_input(model.token_embedding(tokens), positions)  # (B, T, D), as TinyLM.forward
    for block in model.blocks[:layer]:
        x = block(x, positions)
    block = model.blocks[layer]
    attn, enc = block.attn, block.attn.encoding
    q, k, _ = attn.qkv(block.ln1(x)).view(B, T, 3, attn.num_heads, attn.head_dim).permute(2, 0, 3, 1, 4)
    q, k = enc.rotate_qk(q, k, positions, positions)                             # (B, H, T, hd) each
    scores = q @ k.transpose(-2, -1) / attn.head_dim ** 0.5                       # (B, H, T, T)
    bias = enc.score_bias(q, positions, positions)
    return scores if bias is None else scores + bias


def extend_by_copying(table: torch.Tensor, new_len: int) -> torch.Tensor:
    """A (new_len, d) position table whose row t is row t % n of the trained (n, d) `table`: Longformer's
    initialisation of its 4,096 positions from RoBERTa's 512 (Beltagy et al. 2020, section 5; their
    conversion script copies the rows "over and over"). A new tensor; `table` is not modified."""
    _checks.float_tensor("table", table)
    if table.dim() != 2 or not table.shape[0]:
        raise ValueError(f"table must have shape (positions, dim) with at least one row, got {tuple(table.shape)}")
    new_len = _checks.positive_int("new_len", new_len)
    rows = torch.arange(new_len, device=table.device) % table.shape[0]
    return table.detach()[rows].clone()


def interpolate_grid(table: torch.Tensor, grid: tuple[int, int], new_grid: tuple[int, int]) -> torch.Tensor:
    """ViT's answer for a new image size (Dosovitskiy et al. 2021, section 3.2: "2D interpolation of the
    pre-trained position embeddings, according to their location in the original image"): the (rows*cols, d)
    patch-position table seen as a (rows, cols) grid of d-vectors, resized to `new_grid` by bicubic
    interpolation as Hugging Face's ViTEmbeddings.interpolate_pos_encoding does (its [CLS] row aside), patch
    centres aligned. (The authors' code resizes with scipy.ndimage.zoom(order=1): bilinear, corners aligned;
    notebook 04 compares the two readings.)
    Returns (new_rows*new_cols, d); `table` is not modified."""
    _checks.float_tensor("table", table)
    for name, pair in (("grid", grid), ("new_grid", new_grid)):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"{name} must be a (rows, cols) pair of ints, got {pair!r}")
    (rows, cols), (new_rows, new_cols) = grid, new_grid
    for name, value in (("grid", rows), ("grid", cols), ("new_grid", new_rows), ("new_grid", new_cols)):
        _checks.positive_int(name, value)
    if table.dim() != 2 or table.shape[0] != rows * cols:
        raise ValueError(f"table must have shape (rows*cols={rows * cols}, dim) for grid {grid}, "
                         f"got {tuple(table.shape)}")
    image = table.detach().reshape(1, rows, cols, -1).permute(0, 3, 1, 2)         # (1, d, rows, cols)
    resized = torch.nn.functional.interpolate(image, size=(new_rows, new_cols), mode="bicubic", align_corners=False)
    return resized.permute(0, 2, 3, 1).reshape(new_rows * new_cols, -1)


@contextlib.contextmanager
def _one_thread():
    """One intra-op thread: reductions run in a fixed order, so a seeded run repeats exactly. Denormal
    floats are flushed to zero meanwhile: once the model is sure of its answers, attention weights of
    ~1e-40 would otherwise make the CPU matmuls several times slower. (torch has no getter for that
    flag; it is set back to torch's default, off.)"""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_num_threads(before)
        torch.set_flush_denormal(False)


def train_position_demo(encoding: str = "learned", *, vocab_size: int = 16, seq_len: int = 32, lag: int = 1,
                        d_model: int = 32, num_heads: int = 2, num_layers: int = 1, batch_size: int = 32,
                        lr: float = 3e-3, weight_decay: float = 0.1, steps: int = 240, every: int = 20,
                        seed: int = 0) -> dict:
    """Train TinyLM(encoding=...) on the lag-copy task (CPU, one thread, denormals flushed, seeded;
    AdamW at a constant lr, no clipping) and record the position table.

    Returns a dict: model, config, steps (the recorded steps 0, every, 2*every, ..., and `steps`),
    tables ((n, seq_len, d_model) float32, the learned table after `step` optimizer updates for each
    recorded step; empty for encodings without a table) and losses (the training loss at each step, len `steps`).
    max_len is seq_len: the model has rows for exactly the trained positions.
    """
    config = dict(encoding=encoding, vocab_size=vocab_size, seq_len=seq_len, lag=lag, d_model=d_model,
                  num_heads=num_heads, num_layers=num_layers, batch_size=batch_size, lr=lr,
                  weight_decay=weight_decay, steps=_checks.positive_int("steps", steps, allow_zero=True),
                  every=_checks.positive_int("every", every), seed=seed)
    with _one_thread():
        model = seeded_tinylm(seed, vocab_size, encoding=encoding, d_model=d_model, num_heads=num_heads,
                              num_layers=num_layers, max_len=seq_len)
        generator = torch.Generator().manual_seed(seed)
        table = getattr(getattr(model.encoding, "table", None), "weight", None)
        recorded, tables = [], []

        def record(updates: int):  # the table after `updates` optimizer steps
            if updates % every == 0 or updates == steps:
                recorded.append(updates)
                if table is not None:
                    tables.append(table.detach().clone())

        record(0)
        losses = fit(model, lambda: lag_copy_batch(batch_size, seq_len, vocab_size, lag, generator=generator),
                     steps=steps, lr=lr, weight_decay=weight_decay, on_step=lambda step, loss: record(step + 1))
    return dict(model=model, config=config, steps=recorded,
                tables=torch.stack(tables) if tables else torch.empty(0, seq_len, d_model),
                losses=losses)


def make_learned_snapshots(directory: str | Path | None = None, **overrides) -> dict:
    """Run `train_position_demo(**SNAPSHOT_CONFIG, **overrides)` and write <directory>/learned_snapshots.{npz,json}.

    directory defaults to the repository's data/. The .npz holds `steps` (n,), `tables` (n, seq_len,
    d_model) float32 and `losses` (steps,) float32; the .json holds the config and how, when and with
    which versions they were made. Returns the run's dict (as train_position_demo).
    """
    config = {**SNAPSHOT_CONFIG, **overrides}
    run = train_position_demo(**config)
    directory = Path(directory) if directory is not None else data_dir(must_exist=False)
    directory.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(directory / f"{SNAPSHOT_STEM}.npz", steps=np.asarray(run["steps"], dtype=np.int64),
                        tables=run["tables"].numpy().astype(np.float32),
                        losses=np.asarray(run["losses"], dtype=np.float32))
    provenance = dict(made_by=f"{__name__}.make_learned_snapshots()", config=config, flush_denormal=True,
                      task="copy the token `lag` places back (targets -100 where t < lag), uniform random tokens",
                      arrays={"steps": "recorded steps (n,)",
                              "tables": "learned position table after `step` optimizer updates, for each recorded "
                                        "step (n, seq_len, d_model)",
                              "losses": "training loss of every step (steps,)"},
                      final_loss=run["losses"][-1] if run["losses"] else None,
                      torch=torch.__version__, numpy=np.__version__, posenc_lib=__version__,
                      python=platform.python_version(), machine=platform.machine(), threads=1,
                      made_at=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
    (directory / f"{SNAPSHOT_STEM}.json").write_text(json.dumps(provenance, indent=1) + "\n", encoding="utf-8")
    return run


def load_learned_snapshots(directory: str | Path | None = None) -> dict:
    """The shipped snapshots (default: data/): dict with steps (list), tables ((n, T, d) float32 tensor),
    losses (list), provenance (the .json, {} if absent)."""
    npz_path = data_file(f"{SNAPSHOT_STEM}.npz", directory, made_by=MAKE_SNAPSHOTS)
    json_path = npz_path.with_suffix(".json")
    with np.load(npz_path) as data:
        steps, tables, losses = data["steps"].tolist(), torch.from_numpy(data["tables"].copy()), data["losses"].tolist()
    provenance = json.loads(json_path.read_text(encoding="utf-8")) if json_path.exists() else {}
    return dict(steps=steps, tables=tables, losses=losses, provenance=provenance)
