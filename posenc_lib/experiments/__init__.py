"""Train short, test long: the experiments behind notebooks 04 (learned table), 07 (extrapolation) and
08 (context extension).

    python -m posenc_lib.experiments            # 07 and 08 (= make experiments), writes data/experiments_*
    python -m posenc_lib.experiments --quick    # a smoke run (few steps), written to /tmp unless --out is given
    python -m posenc_lib.experiments --learned-snapshots   # notebook 04's data/learned_snapshots.*

One job per module:
    corpus       the text: fixed Python standard-library files, one ASCII character = one token
    config       ExperimentConfig, every setting of a run (stored with the results)
    training     the one AdamW loop (`fit`), its learning-rate schedule, the experiment's TinyLM
    evaluation   the loss on the last L positions of windows of L..8L; RoPE context-extension swaps
    runner       the runs of 07 and 08 over worker processes, their provenance, run_all, live_run
    results      data/ (found in one place), load_results, load_rope_model, write_results
    learned      notebook 04: the lag-copy task and the snapshots of a learned position table
    summary      readings of the cached results: 09's row per encoding, rankings, early positions, exposure

Model: `TinyLM` (2 layers, d_model 64, 4 heads), identical for every encoding except the encoding
(NoPE, sinusoidal, learned, T5 bias, RoPE, ALiBi), the same seed giving the same shared initial
weights. Trained on windows of L = 64 characters, then evaluated on windows of L, 2L, 4L, 8L that all
END at the same places of the held-out text, scoring only the LAST L positions of each window: the
predicted characters are identical at every length, only the positions they sit at (and how much
context precedes them) change. A learned table has no row past L, so its longer-window losses are
None (null in JSON), not a number.

Context extension (notebook 08): the RoPE models are re-evaluated at 2L..8L with each
`rope_inv_freq` scaling (no fine-tuning), then fine-tuned briefly at 4L with position interpolation
(and, as a control, with plain RoPE) and evaluated again, one seed (config.finetune_seeds).
"""
from ..attention import where_it_acts
from ..scaling import EXTENSION_METHODS
from .config import EXPERIMENT_ENCODINGS, ExperimentConfig, config_from
from .corpus import (CORPUS_FILES, UNK_ID, VALID_FILES, VOCAB_SIZE, Corpus, corpus_paths, decode, encode, load_corpus,
                     stdlib_dir)
from .evaluation import eval_ends, evaluate, method_position_loss, rope_scaling, supports_length, with_rope_scaling
from .results import (EXTENSION_FILE, EXTRAPOLATION_FILE, ROPE_STATE_FILE, data_dir, data_file, load_results,
                      load_rope_model, write_results)
from .runner import extension_eval, finetune_and_evaluate, live_run, run_all, summarize, train_and_evaluate
from .summary import early_positions, encoding_summary, finetune_share, rankings, training_exposure
from .training import build_model, fit, seeded_tinylm, train, warmup_cosine_lr

__all__ = [
    "CORPUS_FILES", "EXPERIMENT_ENCODINGS", "EXTENSION_FILE", "EXTENSION_METHODS", "EXTRAPOLATION_FILE",
    "ROPE_STATE_FILE", "UNK_ID", "VALID_FILES", "VOCAB_SIZE", "Corpus", "ExperimentConfig",
    "build_model", "config_from", "corpus_paths", "data_dir", "data_file", "decode", "early_positions", "encode",
    "encoding_summary", "eval_ends", "evaluate", "extension_eval", "finetune_and_evaluate", "finetune_share", "fit",
    "live_run", "load_corpus", "load_results", "load_rope_model", "method_position_loss", "rankings", "rope_scaling",
    "run_all", "seeded_tinylm", "stdlib_dir", "summarize", "supports_length", "train", "train_and_evaluate",
    "training_exposure", "warmup_cosine_lr",
    "where_it_acts", "with_rope_scaling", "write_results",
]
