"""Train short, test long: the experiments behind notebooks 04 (learned table), 07 (extrapolation) and
08 (context extension).

    python -m posenc_lib.experiments            # 07 and 08 (= make experiments), writes data/experiments_*
    python -m posenc_lib.experiments --quick    # a smoke run (few steps), written to /tmp unless --out is given
    python -m posenc_lib.experiments --learned-snapshots   # notebook 04's data/learned_snapshots.*

One job per module:
    corpus       the text: fixed Python standard-library files, one ASCII character = one token
    config       ExperimentConfig, every setting of a run (stored with the results)
    training     the one AdamW loop (`fit`), its learning-rate schedule, the experiment's TinyLM
    evaluation   the loss on the last L positions of windows of L..8L; the sliding-window baseline (the same
                 characters, each with exactly L of context); RoPE context-extension swaps
    probe        the retrieval probe: a random string written twice, scored on its second copy
    own_encoding your encoding: one run beside the cached arms (07), once it keeps the protocol's rules
                 (checked by posenc_lib.encoding_rules, with the experiment's sizes: experiment_config)
    runner       the runs of 07 and 08 over worker processes, their provenance, run_all, live_run
    paths        where data/ is (a clone's, else an installed wheel's), data_file naming what is missing
    results      load_results, load_rope_model, write_results, load_model_configs (notebook 10's public
                 configs)
    learned      notebook 04: the lag-copy task and the snapshots of a learned position table
    summary      readings of the cached results: 09's row per encoding, rankings, early positions, the
                 sliding baseline, the probe, exposure, the fine-tune arms

Model: `TinyLM` (2 layers, d_model 64, 4 heads), identical for every encoding except the encoding
(NoPE, sinusoidal, learned, T5 bias, RoPE, ALiBi), the same seed giving the same shared initial
weights. Trained on windows of L = 64 characters, then evaluated on windows of L, 2L, 4L, 8L that all
END at the same places of the held-out text, scoring only the LAST L positions of each window: the
predicted characters are identical at every length, only the positions they sit at (and how much
context precedes them) change. A learned table has no row past L, so its longer-window losses are
None (null in JSON), not a number.

Every model is also scored on the same characters with exactly L of context (sliding windows), and
probed for retrieval: a random string written twice into held-out text, scored on its second copy,
at distances inside and beyond L.

Context extension (notebook 08): the RoPE models are re-evaluated at 2L..8L with each
`rope_inv_freq` scaling (no fine-tuning), then fine-tuned at 4L in four arms with the same budget
(plain RoPE, position interpolation, YaRN, and the base raised as deployed: ABF), three seeds
(config.finetune_seeds), and evaluated and probed again.
"""
from .config import EXPERIMENT_ENCODINGS, FINETUNE_ARMS, ExperimentConfig, config_from
from .corpus import (
    CORPUS_FILES,
    UNK_ID,
    VALID_FILES,
    VOCAB_SIZE,
    Corpus,
    corpus_paths,
    decode,
    encode,
    load_corpus,
    stdlib_dir,
)
from .evaluation import (
    eval_ends,
    evaluate,
    evaluate_sliding,
    method_position_loss,
    rope_scaling,
    set_rope_scaling,
    supports_length,
)
from .own_encoding import train_own_encoding
from .paths import data_dir, data_file
from .probe import make_probes, probe_cells, probe_windows, retrieval_probe
from .results import (
    EXTENSION_FILE,
    EXTRAPOLATION_FILE,
    MODEL_CONFIGS_FILE,
    ROPE_STATE_FILE,
    STATE_FILES,
    load_model_configs,
    load_results,
    load_rope_model,
    load_seed0_model,
    write_results,
)
from .runner import (
    extension_eval,
    finetune_and_evaluate,
    live_run,
    run_all,
    summarize,
    summarize_probe,
    train_and_evaluate,
)
from .summary import (
    context_effect,
    early_positions,
    encoding_summary,
    finetune_leads,
    finetune_share,
    probe_gains,
    rankings,
    training_exposure,
)
from .training import build_model, fit, seeded_tinylm, train, warmup_cosine_lr

__all__ = [
    "CORPUS_FILES", "Corpus", "EXPERIMENT_ENCODINGS", "EXTENSION_FILE", "EXTRAPOLATION_FILE",
    "ExperimentConfig", "FINETUNE_ARMS", "MODEL_CONFIGS_FILE", "ROPE_STATE_FILE", "STATE_FILES", "UNK_ID",
    "VALID_FILES", "VOCAB_SIZE", "build_model", "config_from", "context_effect", "corpus_paths", "data_dir",
    "data_file", "decode", "early_positions", "encode", "encoding_summary", "eval_ends", "evaluate", "evaluate_sliding",
    "extension_eval", "finetune_and_evaluate", "finetune_leads", "finetune_share", "fit", "live_run", "load_corpus",
    "load_model_configs", "load_results", "load_rope_model", "load_seed0_model", "make_probes", "method_position_loss",
    "probe_cells", "probe_gains", "probe_windows", "rankings", "retrieval_probe", "rope_scaling", "run_all",
    "seeded_tinylm", "set_rope_scaling", "stdlib_dir", "summarize", "summarize_probe", "supports_length", "train",
    "train_and_evaluate", "train_own_encoding", "training_exposure", "warmup_cosine_lr", "write_results",
]
