#!/usr/bin/env bash
# Issue 13 on one GPU (H100 80GB or H200): LoRA training steps of the harness against the naive
# HF + PEFT step in the same process (retriever at the Qwen3-0.6B and Qwen3-8B shapes, reranker at
# the Mistral-Nemo-12B shape), with the paper-scale epoch projection each prints, then
# hard-negative batching (Algorithm 1) at 100K and 400K documents. Random weights, nothing
# downloaded. About 6 minutes expected, 9 at most (limits 100 + 150 + 150 + 120 s): each bench
# has its own limit, so one stuck shape cannot eat the others'. A bench that fails compiled (not
# one that runs out of time) is run once more with --no-compile, within the same limit again.
# Results: benchmarks/results/train-*.json and batching-*.json, copied with the log into $OUT.
# Knobs: STEPS / WARMUP (timed / untimed steps a path, default 3 / 2), WITH_12B_RETRIEVER=1 adds
# the retriever at the 12B shape (about 1.5 more minutes), SKIP_BATCHING=1, PROFILE=1 adds the
# 0.6B retriever uncompiled (its own result file) and the kernel profiles of its harness step,
# compiled and not (benchmarks/profile_train.py, about 2 more minutes).
set -uo pipefail
export PYTHONPATH=$PWD:$PWD/benchmarks PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
S=${STEPS:-3}; W=${WARMUP:-2}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/log"
python -c "import torch, transformers, peft; print('torch', torch.__version__, 'transformers', transformers.__version__, 'peft', peft.__version__)" 2>&1 | tee -a "$OUT/log"
quiet() { grep -v "Warning\|warn(\|warnings.warn" | tee -a "$OUT/log"; }
bench() {  # LIMIT_SECONDS ARGS...: compiled, and if that fails uncompiled
  local limit=$1; shift
  timeout "$limit" python -m aa_harness_bench "$@" 2>&1 | quiet; local rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] && return 0
  [ "$rc" -eq 124 ] && { echo "== out of time ($limit s): $*" | tee -a "$OUT/log"; return 1; }
  echo "== retrying uncompiled: $*" | tee -a "$OUT/log"
  timeout "$limit" python -m aa_harness_bench "$@" --no-compile 2>&1 | quiet
}
bench 100 train retriever --arch qwen3-0.6b --random-weights --steps "$S" --warmup "$W" ${R06_ARGS:-}
bench 150 train retriever --arch qwen3-8b --random-weights --steps "$S" --warmup "$W" ${R8_ARGS:-}
bench 150 train reranker --arch mistral-nemo-12b --random-weights --steps "$S" --warmup "$W" ${RR_ARGS:-}
[ -n "${SKIP_BATCHING:-}" ] || timeout 120 python -m aa_harness_bench batching --docs 100000 400000 2>&1 | quiet
[ -z "${WITH_12B_RETRIEVER:-}" ] || bench 150 train retriever --arch mistral-nemo-12b --random-weights --steps 2 --warmup 2
if [ -n "${PROFILE:-}" ]; then
  R=benchmarks/results/train-retriever-qwen3-0.6b-uncompiled.json
  timeout 100 python -m aa_harness_bench train retriever --arch qwen3-0.6b --random-weights --steps "$S" --warmup "$W" \
    --no-compile --out "$R" 2>&1 | quiet
  for flag in "" --no-compile; do timeout 120 python benchmarks/profile_train.py --arch qwen3-0.6b $flag 2>&1 | quiet; done
fi
cp benchmarks/results/train-*.json benchmarks/results/batching-*.json "$OUT/" 2>/dev/null
ls -la "$OUT"
