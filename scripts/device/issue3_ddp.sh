#!/usr/bin/env bash
# On a 2-GPU machine (device tool): the SADIRI recipe on all-MiniLM-L6-v2 trained with DDP on
# 2 GPUs and, for comparison, on 1 GPU with the same global batch; meanwhile, on the second
# GPU, the SADIRI-v2 retriever variant with cosine similarity, evaluated on pan19-en.
# Needs in /root/stash: minilm.tar, smol.part0*; in the tree: .stage/corpora, .stage/train2, .whl (gguf).
set -uo pipefail
cd /root/stash && mkdir -p models && tar xf minilm.tar -C models && cat smol.part0* > smol.tar && tar xf smol.tar -C models && cd - >/dev/null
. scripts/device/staged_env.sh
MINI=sentence-transformers/all-MiniLM-L6-v2
quiet() { grep -v "Batches\|Loading weights\|Converting and de-quantizing\|encoding:\|step [0-9]*[1-9]/"; }
nvidia-smi --query-gpu=name --format=csv,noheader
python3 -m torch.distributed.run --nproc_per_node=2 --master_port=29517 -m harness train sadiri --train $TRAIN \
  --out /root/stash/sadiri-minilm-ddp2 --set backbone=$MINI 2>&1 | quiet
( CUDA_VISIBLE_DEVICES=1 python3 -m harness train sadiri-v2-retriever --train $TRAIN --out /root/stash/v2-cos \
    --set backbone=$SMOL --set similarity=cosine 2>&1 | quiet
  CUDA_VISIBLE_DEVICES=1 python3 -m harness run sadiri-v2-retriever --collection pan19-en --name sadiri-v2-smollm2-cosine \
    --model /root/stash/v2-cos/model --set backbone=$SMOL --set similarity=cosine --no-progress 2>&1 | quiet ) &
CUDA_VISIBLE_DEVICES=0 python3 -m harness train sadiri --train $TRAIN --out /root/stash/sadiri-minilm-1gpu \
  --set backbone=$MINI 2>&1 | quiet
wait
for m in sadiri-minilm-ddp2 sadiri-minilm-1gpu; do cp /root/stash/$m/train_log.json "$OUT/$m.train_log.json"; done
cp /root/stash/v2-cos/train_log.json "$OUT/sadiri-v2-smollm2-cosine.train_log.json"
cp /root/stash/v2-cos/train_config.json "$OUT/sadiri-v2-smollm2-cosine.train_config.json"
tar czf "$OUT/runs.tgz" leaderboards/runs/pan19-en/sadiri-v2-smollm2-cosine
ls -la "$OUT"
