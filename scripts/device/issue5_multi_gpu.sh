#!/usr/bin/env bash
# Issue 5 on 2 GPUs: sharded encoding against one GPU (same process group, same run), and a
# DDP training step against one process with the same global batch (TRAIN_SET="--set bf16=false"
# and TAG=fp32 for the check in fp32, where the two must agree to rounding). Needs the Qwen3 tokenizer
# carried at .cache/models/qwen3-tokenizer. Results are packed into $OUT.
set -uo pipefail
export PYTHONPATH=$PWD:$PWD/benchmarks PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
N=${NPROC:-2}
nvidia-smi -L | tee "$OUT/log"
run() { "$@" 2>&1 | grep -v "Warning\|warn(" | tee -a "$OUT/log"; }
if [ -z "${SKIP_ENCODE:-}" ]; then
  run torchrun --nproc_per_node "$N" -m aa_harness_bench encode --arch qwen3-0.6b --random-weights --docs 8192 --shard
  run torchrun --nproc_per_node "$N" -m aa_harness_bench encode --arch qwen3-8b --random-weights --docs 2048 --shard
fi
W=/tmp/ddp; rm -rf $W
run python benchmarks/ddp_step_check.py prepare $W .cache/models/qwen3-tokenizer
TRAIN="train sadiri-v2-retriever --train $W/demo.jsonl --set backbone=$W/backbone --set hard_negatives=false --set max_steps=${STEPS:-6} --set authors_per_batch=16 ${TRAIN_SET:-}"
run python -m harness $TRAIN --out $W/one
run torchrun --nproc_per_node "$N" -m harness $TRAIN --out $W/two
G=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '-' | tr 'A-Z' 'a-z')
run python benchmarks/ddp_step_check.py compare $W/one $W/two --out benchmarks/results/ddp-step-qwen3-0.6b-lora-x$N-${TAG:-bf16}-$G.json
tar czf "$OUT/results.tgz" benchmarks/results
