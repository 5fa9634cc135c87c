#!/usr/bin/env bash
# On one GPU (device tool): Table 1 on public data. SBERT baselines, then SADIRI (all-mpnet-base-v2),
# LUAR (the released architecture on all-mpnet-base-v2) and the SADIRI-v2 retriever on Qwen2.5-0.5B,
# each trained on the curated training pool and evaluated with its untrained backbone on
# reddit-xsub, blogs-xtopic and pan19-en at the four seeds.
#
# Runs in the background (setsid) so it outlives one call; poll with `tail /root/stash/pipeline.log`
# and fetch with `scripts/device/issue11_table1.sh pack` (results so far, as $OUT/*.tgz).
# usage: issue11_table1.sh start COMMIT [STEP ...] | pack
# Staged before, in back-to-back calls (see the closing note of issue 11):
#   /root/stash/mpnet.part*             the fp16 copy of all-mpnet-base-v2, tarred
#   /root/stash/qwen.part*              Qwen2.5-Coder-0.5B-Instruct as one GGUF file, split
#   .stage/data/*.jsonl.gz              carried: reddit-xsub, blogs-xtopic, pan19-en, blogs-background, enron,
#                                       train-xl.curated (the curated training pool; corpus text, never committed)
#   .whl/gguf-*.whl                     carried
# The GGUF is dequantized once, on the first load, into $AA_HARNESS_CACHE/dequantized.
set -uo pipefail
S=/root/stash
R=$S/runs
MPNET=sentence-transformers/all-mpnet-base-v2
QWEN=Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF
TRAIN=$S/corpora/train-xl.curated.jsonl.gz
COLLECTIONS=(reddit-xsub blogs-xtopic pan19-en)

if [ "${1:-}" = pack ]; then
  cd $S && tar czf "$OUT/runs.tgz" runs && tar czf "$OUT/training.tgz" training 2>/dev/null
  [ -d cache/neighbours ] && tar czf "$OUT/neighbours.tgz" -C cache neighbours
  cp $S/pipeline.log "$OUT/" 2>/dev/null; ls -la "$OUT"; exit 0
fi
if [ "${1:-}" = start ]; then  # copy the tree aside (the next call replaces this one) and run from there
  T=$S/tree-$(date +%s) && mkdir -p $S && cp -a . $T  # its own copy: an earlier pipeline may still run
  shift
  setsid bash $T/scripts/device/issue11_table1.sh pipeline "$@" >> $S/pipeline.log 2>&1 < /dev/null &
  sleep 10; tail -3 $S/pipeline.log; exit 0
fi
[ "${1:-}" = pipeline ] || { echo "usage: $0 start COMMIT [STEP ...] | pack" >&2; exit 2; }
cd "$(dirname "$0")/../.."
COMMIT=$2; shift 2
STEPS=("$@"); [ ${#STEPS[@]} -gt 0 ] || STEPS=(sbert qwen-untrained retriever sadiri luar)

setup() {
  mkdir -p $S/models/all-mpnet-base-v2 $S/models/Qwen2.5-Coder-0.5B-Instruct-GGUF $R $S/training
  [ -f $S/models/all-mpnet-base-v2/config.json ] || (cd $S && cat mpnet.part* > mpnet.tar && tar xf mpnet.tar -C models)
  [ -f $S/models/Qwen2.5-Coder-0.5B-Instruct-GGUF/qwen2.5-coder-0.5b-instruct.gguf ] ||
    cat $S/qwen.part* > $S/models/Qwen2.5-Coder-0.5B-Instruct-GGUF/qwen2.5-coder-0.5b-instruct.gguf
  [ -d /tmp/site/gguf ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  if [ -d .stage/data ]; then mkdir -p $S/corpora && cp -n .stage/data/*.jsonl.gz $S/corpora/; fi
}
h() { python3 -m harness "$@" $([ "$1" = train ] || echo --no-progress) 2>&1 | grep -v "Batches\|Loading weights\|Converting and de-quantizing\|encoding:"; }
trained() {  # NAME SYSTEM: keep the training log and model card beside the runs
  cp $S/m/$1/train_log.json $S/training/$1.train_log.json
  cp $S/m/$1/model/aa_model.json $S/training/$1.aa_model.json 2>/dev/null
}
run_all() { for C in "${COLLECTIONS[@]}"; do h run "$@" --collection $C --runs-dir $R; done; }
variant() {  # NAME --set ...: train the retriever on Qwen2.5-0.5B with the centered-unit head, evaluate
  local name=$1; shift
  h train sadiri-v2-retriever --train $TRAIN --out $S/m/$name --set backbone=$QWEN --set projection_init=centered-unit \
    --set checkpoint_every=50 "$@"
  trained $name
  run_all sadiri-v2-retriever --name $name --model $S/m/$name/model --set backbone=$QWEN --set projection_init=centered-unit "$@"
}

pipeline() {
  export PYTHONPATH=$PWD:/tmp/site AA_HARNESS_MODEL_DIR=$S/models AA_HARNESS_CORPORA=$S/corpora \
         AA_HARNESS_CACHE=$S/cache AA_HARNESS_DISABLE_PLUGIN_AUTOLOAD=1 PYTHONUNBUFFERED=1 AA_HARNESS_GIT_COMMIT=$COMMIT
  setup
  nvidia-smi --query-gpu=name --format=csv,noheader
  for step in "${STEPS[@]}"; do
    echo "== $step $(date +%T)"
    case $step in
      sbert) for C in reddit-xsub blogs-xtopic pan18-en; do h run sbert --collection $C --runs-dir $R; done ;;
      qwen-untrained) run_all sadiri-v2-retriever --name qwen2.5-0.5b-untrained --set backbone=$QWEN ;;
      retriever)
        h train sadiri-v2-retriever --train $TRAIN --out $S/m/sadiri-v2-qwen2.5-0.5b --set backbone=$QWEN \
          --set projection_init=centered-unit --set checkpoint_every=20
        trained sadiri-v2-qwen2.5-0.5b
        run_all sadiri-v2-retriever --name sadiri-v2-qwen2.5-0.5b --model $S/m/sadiri-v2-qwen2.5-0.5b/model \
          --set backbone=$QWEN --set projection_init=centered-unit ;;
      retriever-step1)  # diagnostic: the paper's recipe stopped after one step (its head as initialised)
        variant sadiri-v2-qwen2.5-0.5b-at-step-1 --set max_steps=1 ;;
      retriever-b16)  # a named variant: one GPU's share of the paper's batch, 4x more steps, lr 1e-4
        variant sadiri-v2-qwen2.5-0.5b-b16-lr1e-4 --set authors_per_batch=16 --set lr=1e-4 ;;
      retriever-cosine-b16)  # a named variant: cosine similarity (not the paper's dot product), b16, lr 1e-4
        variant sadiri-v2-qwen2.5-0.5b-cosine-b16-lr1e-4 --set similarity=cosine --set authors_per_batch=16 --set lr=1e-4 ;;
      sadiri-untrained) run_all sadiri --name mpnet-untrained --set backbone=$MPNET ;;
      neighbours)  # the reranker's SBERT neighbourhoods of the training pool, for a later machine
        python3 -c "
from harness.data.collection import read_documents
from plugins.sadiri_v2.config import RerankerConfig
from plugins.sadiri_v2.reranker_training import QueryNegatives
QueryNegatives(list(read_documents(['$TRAIN']).values()), RerankerConfig(sbert_model='$MPNET')).neighbours(print)" ;;
      sadiri)
        h train sadiri --train $TRAIN --out $S/m/sadiri-mpnet --set backbone=$MPNET
        trained sadiri-mpnet
        run_all sadiri --name sadiri-mpnet --model $S/m/sadiri-mpnet/model --set backbone=$MPNET ;;
      luar)
        h train luar --train $TRAIN --out $S/m/luar-mpnet --set backbone=$MPNET --set checkpoint=none
        trained luar-mpnet
        run_all luar --name luar-mpnet --model $S/m/luar-mpnet/model --set backbone=$MPNET --set checkpoint=none ;;
    esac
  done
  echo "== done $(date +%T)"
}

pipeline
