#!/usr/bin/env bash
# On one GPU (device tool): train the SADIRI recipe on all-MiniLM-L6-v2 and the SADIRI-v2
# retriever on SmolLM2-135M-Instruct with the curated blogs-train, then evaluate the trained
# models and their untrained backbones on pan19-en at the four seeds.
# Needs in /root/stash: minilm.tar, smol.part0*; in the tree: .stage/corpora, .stage/train2, .whl (gguf).
set -uo pipefail
cd /root/stash && mkdir -p models && tar xf minilm.tar -C models && cat smol.part0* > smol.tar && tar xf smol.tar -C models && cd - >/dev/null
. scripts/device/staged_env.sh
MINI=sentence-transformers/all-MiniLM-L6-v2
quiet() { grep -v "Batches\|Loading weights\|Converting and de-quantizing\|encoding:"; }
h() { python3 -m harness "$@" 2>&1 | quiet; }
nvidia-smi --query-gpu=name --format=csv,noheader
h train sadiri --train $TRAIN --out /root/stash/sadiri-minilm --set backbone=$MINI
h run sadiri --collection pan19-en --name sadiri-minilm --model /root/stash/sadiri-minilm/model --set backbone=$MINI --no-progress
h run sadiri --collection pan19-en --name minilm-untrained --set backbone=$MINI --no-progress
h train sadiri-v2-retriever --train $TRAIN --out /root/stash/v2-smollm2 --set backbone=$SMOL
h run sadiri-v2-retriever --collection pan19-en --name sadiri-v2-smollm2 --model /root/stash/v2-smollm2/model --set backbone=$SMOL --no-progress
h run sadiri-v2-retriever --collection pan19-en --name smollm2-untrained --set backbone=$SMOL --no-progress
tar czf "$OUT/runs.tgz" leaderboards/runs/pan19-en
for m in sadiri-minilm v2-smollm2; do
  cp /root/stash/$m/train_log.json "$OUT/$m.train_log.json"; cp /root/stash/$m/train_config.json "$OUT/$m.train_config.json"
done
ls -la "$OUT"
