#!/usr/bin/env bash
# On one GPU (device tool): SBERT (all-mpnet-base-v2, the paper's baseline) on the HRS-like public
# benchmarks reddit-xsub and blogs-xtopic at the four seeds, on the committed split manifests
# (splits/<collection>/seed-*.json; blogs-xtopic reads its committed topic labels from
# splits/blogs-xtopic/topic-labels.json, so no label is re-derived on the GPU machine).
# Hands back the run folders as $OUT/runs.tgz (unpack at the repository root) and the log.
#
# Needs, like curation_embeddings.sh: the model as /root/stash/mpnet.part0* (the tarred fp16 copy
# of all-mpnet-base-v2, a folder named all-mpnet-base-v2) or already unpacked in
# /root/stash/models/all-mpnet-base-v2; in the tree (carried, ignored): .stage/corpora/ holding
# reddit-xsub.jsonl.gz and blogs-xtopic.jsonl.gz (17 MB). Nothing is read from ../shared.
# usage: scripts/device/issue14_sbert.sh [COLLECTION ...]   (default: reddit-xsub blogs-xtopic;
#        pan18-en / pan19-en also need pan1x-en, blogs-background and enron .jsonl.gz in .stage/corpora)
set -euo pipefail
if [ ! -d /root/stash/models/all-mpnet-base-v2 ]; then
  cd /root/stash && cat mpnet.part0* > mpnet.tar && mkdir -p models && tar xf mpnet.tar -C models && cd - >/dev/null
fi
COLLECTIONS=("$@"); [ ${#COLLECTIONS[@]} -gt 0 ] || COLLECTIONS=(reddit-xsub blogs-xtopic)
for C in "${COLLECTIONS[@]}"; do
  case $C in pan1[89]-en) need="$C blogs-background enron";; *) need=$C;; esac
  for f in $need; do
    [ -f .stage/corpora/$f.jsonl.gz ] || { echo "missing .stage/corpora/$f.jsonl.gz (for $C)" >&2; exit 2; }
  done
done
export PYTHONPATH=$PWD AA_HARNESS_MODEL_DIR=/root/stash/models AA_HARNESS_CORPORA=$PWD/.stage/corpora \
       AA_HARNESS_CACHE=/root/stash/cache AA_HARNESS_DISABLE_PLUGIN_AUTOLOAD=1 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
for C in "${COLLECTIONS[@]}"; do
  # `split` only checks the committed manifests against the staged data (it fails if they differ)
  python3 -m harness split --collection "$C" 2>&1 | tail -n 6
  python3 -m harness run sbert --collection "$C" --no-progress 2>&1 | grep -v "Batches\|Loading weights\|encoding:" \
    | tee -a "$OUT/issue14_sbert.log"
done
tar czf "$OUT/runs.tgz" $(for C in "${COLLECTIONS[@]}"; do echo leaderboards/runs/$C/sbert; done)
ls -la "$OUT"
