#!/usr/bin/env bash
# On one GPU (device tool): for each negative-sampling strategy given, train the SADIRI-v2
# reranker on SmolLM2-135M-Instruct with the curated blogs-train, then rerank the top 100 of
# FIRST_STAGE (default sadiri-v2-smollm2) on pan19-en at the four seeds.
# usage: issue4_rerank.sh STRATEGY [STRATEGY ...]   (extra --set flags in $RERANK_SET, e.g. author_fraction=1.0)
# Needs in /root/stash: smol.part0*; in the tree: .stage/corpora, .stage/train2, .stage/neighbours, .whl (gguf).
set -uo pipefail
if [ ! -d /root/stash/models/SmolLM2-135M-Instruct ]; then
  cd /root/stash && mkdir -p models && cat smol.part0* > smol.tar && tar xf smol.tar -C models && cd - >/dev/null
fi
mkdir -p /root/stash/cache/neighbours && cp .stage/neighbours/*.npz /root/stash/cache/neighbours/ 2>/dev/null
. scripts/device/staged_env.sh
FIRST=${FIRST_STAGE:-sadiri-v2-smollm2}
TAG=${RERANK_TAG:-}
quiet() { grep -v "Batches\|Loading weights\|Converting and de-quantizing\|reranking:"; }
EXTRA=(); for kv in ${RERANK_SET:-}; do EXTRA+=(--set "$kv"); done
for S in "$@"; do
  OUTDIR=/root/stash/reranker-$S$TAG
  python3 -m harness train sadiri-v2-reranker --train $TRAIN --out $OUTDIR --set backbone=$SMOL --set strategy=$S "${EXTRA[@]}" 2>&1 | quiet
  python3 -m harness rerank sadiri-v2-reranker --collection pan19-en --first-stage $FIRST --model $OUTDIR/model \
    --set backbone=$SMOL --set strategy=$S "${EXTRA[@]}" --name "$FIRST+reranker-$S$TAG" 2>&1 | quiet
  cp $OUTDIR/train_log.json "$OUT/reranker-${S//+/_}$TAG.train_log.json"
  cp $OUTDIR/train_config.json "$OUT/reranker-${S//+/_}$TAG.train_config.json"
done
tar czf "$OUT/runs.tgz" leaderboards/runs/pan19-en/*+reranker-*
