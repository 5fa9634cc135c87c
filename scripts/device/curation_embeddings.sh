#!/usr/bin/env bash
# On a GPU machine (device tool): fill the embedding cache with all-mpnet-base-v2 vectors of
# blogs-train for `aa-harness curate`, and hand the cache back in parts. The curation itself
# (with spaCy person names) then finishes on the CPU from that cache.
# Needs: /root/stash/mpnet.part0* (the fp16 copy of all-mpnet-base-v2, tarred), .stage/train/blogs-train.jsonl.gz
set -euo pipefail
cd /root/stash && cat mpnet.part0* > mpnet.tar && mkdir -p models && tar xf mpnet.tar -C models && cd - >/dev/null
export PYTHONPATH=$PWD AA_HARNESS_MODEL_DIR=/root/stash/models AA_HARNESS_CACHE=/root/stash/cache \
       AA_HARNESS_DISABLE_PLUGIN_AUTOLOAD=1 PYTHONUNBUFFERED=1
python3 -m harness curate --input .stage/train/blogs-train.jsonl.gz --out /root/stash/gpu-curated.jsonl.gz --ner none 2>&1 \
  | grep -v "Batches\|Loading weights"
cp /root/stash/gpu-curated.report.json "$OUT/"
cd /root/stash/cache && tar cf /root/stash/cache.tar embeddings && split -b 15000000 -d /root/stash/cache.tar "$OUT/cache.part"
ls -la "$OUT"
