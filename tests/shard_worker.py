"""Run by tests under torchrun (gloo on CPU): sharded encoding against one process's encoding."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]  # the harness and the bench distribution, from the checkout

import numpy as np  # noqa: E402
import torch  # noqa: E402

from aa_harness_bench.archs import build_model  # noqa: E402
from aa_harness_bench.encode import harness_encoder  # noqa: E402
from aa_harness_bench.workload import random_rows  # noqa: E402
from harness.neural.distributed import world  # noqa: E402
from harness.neural.encoder import embed_features  # noqa: E402
from harness.neural.sharded import embed_sharded  # noqa: E402

rank, size, _ = world()
enc = harness_encoder(build_model("tiny-qwen3", "cpu", torch.float32, seed=0))
rows = random_rows(23, 2, 50, 512, seed=5)
sharded = embed_sharded(enc, rows, torch.device("cpu"), embed=embed_features, max_tokens=300)
if rank == 0:
    single = embed_features(enc, rows, torch.device("cpu"), max_tokens=300)
    np.savez(sys.argv[1], sharded=sharded, single=single)
if size > 1:
    torch.distributed.barrier()  # rank 0 has written; every rank leaves the group together
