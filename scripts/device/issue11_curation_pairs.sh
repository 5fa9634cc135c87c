#!/usr/bin/env bash
# On a GPU machine (device tool): every training author's most dissimilar pair by all-mpnet-base-v2
# over blogs-train + blogs-train-xl + reddit-train, for `aa-harness curate --pairs` to finish on the
# CPU (spaCy person names). Returns the pairs file and the report (no corpus text).
# Staged before, in back-to-back calls: /root/stash/mpnet.part0* (the fp16 copy, tarred) and
# /root/stash/corpora/{blogs-train,reddit-train,blogs-train-xl}.jsonl.gz.
set -euo pipefail
stash=/root/stash
if [ ! -d $stash/models/all-mpnet-base-v2 ]; then
  cat $stash/mpnet.part0* > $stash/mpnet.tar && mkdir -p $stash/models && tar xf $stash/mpnet.tar -C $stash/models
fi
export PYTHONPATH=$PWD AA_HARNESS_MODEL_DIR=$stash/models AA_HARNESS_CACHE=$stash/cache \
       AA_HARNESS_DISABLE_PLUGIN_AUTOLOAD=1 PYTHONUNBUFFERED=1
mkdir -p $stash/cur
c=$stash/corpora
python3 -m harness curate --input $c/blogs-train.jsonl.gz $c/blogs-train-xl.jsonl.gz $c/reddit-train.jsonl.gz \
  --out $stash/cur/train-xl.jsonl.gz --ner none --device cuda 2>&1 | grep -v "Batches\|Loading weights"
cp $stash/cur/train-xl.pairs.jsonl.gz $stash/cur/train-xl.report.json "$OUT/"
nvidia-smi --query-gpu=name --format=csv,noheader > "$OUT/device.txt"
