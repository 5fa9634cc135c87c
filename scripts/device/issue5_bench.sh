#!/usr/bin/env bash
# Issue 5 on one GPU: encode/rerank benchmarks at the paper's shapes, GPU correctness tests,
# exact search scaling. Results land in benchmarks/results/ and are packed into $OUT.
set -uo pipefail
export PYTHONPATH=$PWD:$PWD/benchmarks PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/log"
python -c "import inspect, torch; from torch.nn.attention.varlen import varlen_attn; print(torch.__version__, inspect.signature(varlen_attn))" 2>&1 | tee -a "$OUT/log"
bench() { python -m aa_harness_bench "$@" 2>&1 | grep -v Warning | tee -a "$OUT/log"; }
bench encode --arch qwen3-0.6b --random-weights --docs 4096 ${ENCODE_VARIANTS_06:-}
bench encode --arch qwen3-8b --random-weights --docs 1024 ${ENCODE_VARIANTS_8:-}
bench rerank --arch mistral-nemo-12b --random-weights ${RERANK_ARGS:-}
[ -n "${SKIP_TESTS:-}" ] || python -m pytest -m gpu tests/test_fast_paths_gpu.py -q -s -p no:cacheprovider 2>&1 | tail -15 | tee -a "$OUT/log"
[ -n "${SKIP_SEARCH:-}" ] || bench search --sizes ${SEARCH_SIZES:-100000 1000000 4000000} --dim 512 --exact-only
tar czf "$OUT/results.tgz" benchmarks/results
