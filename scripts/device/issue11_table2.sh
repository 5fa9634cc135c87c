#!/usr/bin/env bash
# On one GPU (device tool): Table 2 on public data -- the SADIRI-v2 reranker (Qwen2.5-0.5B, the
# paper's recipe: 10% of the curated authors as queries, m = 12, tau 1, lr 1e-4) trained per
# negative strategy and run on the top 100 of FIRST (a first-stage run carried in
# leaderboards/runs) -- and the 1.5B backbone's retriever rows.
#
# Runs in the background (setsid) so it outlives one call; poll `tail /root/stash/pipeline*.log`,
# fetch with `issue11_table2.sh pack`. LANE=x runs another pipeline beside the first (its log
# pipeline-x.log; the staging is done once, under a lock); two lanes keep one card busier than one.
# The machine goes back 30 s after a call ends: while lanes run, keep a call in flight (`sleep 500;
# tail -n 2 /root/stash/pipeline-*.log`), back to back, and do local work beside it, not between.
# `stop` ends every lane (its pattern cannot match the calling shell, as a plain `pkill -f` can).
# usage: issue11_table2.sh start COMMIT STEP ... | pack | stop
#   STEP: ab-reranker / ab-retriever (issue 13: a short training, AB_STEPS steps, through the Hugging
#         Face path and then fast_training; extra flags in AB_SET, e.g. "--set grad_checkpointing=false"),
#         rerank:STRATEGY (q, p, r, q+p, q+r, p+r, q+p+r), rerank-fast:STRATEGY (the same with
#         fast_training, for issue 13's measurement: trained only), qwen15-untrained, qwen15-cosine-b16,
#         bench13 (issue 13's issue13_bench_train.sh with PROFILE=1, into $S/bench13; needs no staging),
#         mark:NAME (touch $S/NAME.done) and wait:NAME (until it exists: a lane waits for another's
#         step, e.g. for the card alone to be free again)
#   RERANK_SET="k=v ..." adds --set flags to the reranker's training and runs (a named variant),
#   RERANK_TAG names it ("-f0.3-b4": runs "$FIRST+reranker-STRATEGY-f0.3-b4").
# Staged before, in back-to-back calls:
#   /root/stash/qwen.part*   Qwen2.5-Coder-0.5B-Instruct GGUF, split
#   /root/stash/q15.part*    Qwen2.5-Coder-1.5B-Instruct GGUF (Q4_K_M), split
#   carried: .stage/data (corpora), .stage/neighbours (the reranker's all-mpnet-base-v2 neighbourhoods
#            of the training pool, computed by issue11_table1.sh's `neighbours` step), .whl (gguf),
#            leaderboards/runs/<collection>/<FIRST> for each collection reranked
set -uo pipefail
S=/root/stash
R=$S/runs
QWEN=Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF
QWEN15=Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF
TRAIN=$S/corpora/train-xl.curated.jsonl.gz
FIRST=${FIRST:-sadiri-v2-qwen2.5-0.5b-cosine-b16-lr1e-4}
RERANK_ON=(${RERANK_COLLECTIONS:-reddit-xsub pan19-en})  # another name: an array is not exported to the pipeline
COLLECTIONS=(reddit-xsub blogs-xtopic pan19-en)

if [ "${1:-}" = pack ]; then
  cd $S && tar czf - runs | split -b 15000000 -d -a 1 - "$OUT/runs.tgz.part"  # files come back in 16 MiB at most
  tar czf "$OUT/training.tgz" training 2>/dev/null
  [ -d bench13 ] && tar czf "$OUT/bench13.tgz" bench13
  cat $S/pipeline*.log > "$OUT/pipeline.log" 2>/dev/null; ls -la "$OUT"; exit 0
fi
if [ "${1:-}" = stop ]; then
  pkill -f "[i]ssue11_table2.sh pipeline"; pkill -f "[h]arness train"; pkill -f "[h]arness rerank"; exit 0
fi
if [ "${1:-}" = start ]; then
  T=$S/tree-$(date +%s) && mkdir -p $S && cp -a . $T
  shift
  LOG=$S/pipeline${LANE:+-$LANE}.log
  setsid bash $T/scripts/device/issue11_table2.sh pipeline "$@" >> $LOG 2>&1 < /dev/null &
  sleep 10; tail -3 $LOG; exit 0
fi
[ "${1:-}" = pipeline ] || { echo "usage: $0 start COMMIT STEP ... | pack | stop" >&2; exit 2; }
cd "$(dirname "$0")/../.."
COMMIT=$2; shift 2

setup() {  # under a lock: lanes start together
  exec 9> $S/setup.lock && flock 9
  mkdir -p $S/models/Qwen2.5-Coder-0.5B-Instruct-GGUF $S/models/Qwen2.5-Coder-1.5B-Instruct-GGUF $R $S/training $S/corpora $S/cache/neighbours
  [ -f $S/models/Qwen2.5-Coder-0.5B-Instruct-GGUF/qwen2.5-coder-0.5b-instruct.gguf ] ||
    cat $S/qwen.part* > $S/models/Qwen2.5-Coder-0.5B-Instruct-GGUF/qwen2.5-coder-0.5b-instruct.gguf
  if ls $S/q15.part* >/dev/null 2>&1 && [ ! -f $S/models/Qwen2.5-Coder-1.5B-Instruct-GGUF/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf ]; then
    cat $S/q15.part* > $S/models/Qwen2.5-Coder-1.5B-Instruct-GGUF/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
  fi
  [ -d /tmp/site/gguf ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  cp -n .stage/data/*.jsonl.gz $S/corpora/ 2>/dev/null
  cp -n .stage/neighbours/* $S/cache/neighbours/ 2>/dev/null
  for C in "${RERANK_ON[@]}"; do  # the first stage's runs, where the reranker reads them
    [ -d leaderboards/runs/$C/$FIRST ] && mkdir -p $R/$C && cp -rn leaderboards/runs/$C/$FIRST $R/$C/
  done
  flock -u 9
}
h() { python3 -m harness "$@" $([ "$1" = run ] && echo --no-progress) 2>&1 | grep --line-buffered -v "Batches\|Loading weights\|Converting and de-quantizing\|encoding:\|reranking:"; }
trained() { cp $S/m/$1/train_log.json $S/training/$1.train_log.json; cp $S/m/$1/model/aa_model.json $S/training/$1.aa_model.json 2>/dev/null; }

pipeline() {
  export PYTHONPATH=$PWD:/tmp/site AA_HARNESS_MODEL_DIR=$S/models AA_HARNESS_CORPORA=$S/corpora \
         AA_HARNESS_CACHE=$S/cache AA_HARNESS_DISABLE_PLUGIN_AUTOLOAD=1 PYTHONUNBUFFERED=1 AA_HARNESS_GIT_COMMIT=$COMMIT
  case " $* " in *" rerank"*|*" ab-"*|*" qwen15"*) setup ;; esac  # bench13, mark and wait need no staging
  nvidia-smi --query-gpu=name --format=csv,noheader
  for step in "$@"; do
    echo "== ${LANE:-} $step $(date +%T)"
    case $step in
      mark:*) touch $S/${step#mark:}.done ;;
      wait:*) while [ ! -f $S/${step#wait:}.done ]; do sleep 5; done ;;
      bench13) OUT=$S/bench13 PROFILE=1 bash scripts/device/issue13_bench_train.sh ;;
      rerank:*|rerank-fast:*)
        local strategy=${step#*:} fast=false tag=${RERANK_TAG:-} extra=()
        for kv in ${RERANK_SET:-}; do extra+=(--set "$kv"); done
        [ "${step%%:*}" = rerank-fast ] && fast=true
        local name=reranker-qwen2.5-0.5b-${strategy//+/_}$tag$([ $fast = true ] && echo -fast)
        h train sadiri-v2-reranker --train $TRAIN --out $S/m/$name --set backbone=$QWEN --set strategy=$strategy \
          --set fast_training=$fast --set checkpoint_every=50 "${extra[@]}"
        trained $name
        if [ "${RERANK_NO_RUN:-}" != 1 ]; then
          for C in "${RERANK_ON[@]}"; do
            h rerank sadiri-v2-reranker --collection $C --first-stage $FIRST --model $S/m/$name/model --runs-dir $R \
              --set backbone=$QWEN --set strategy=$strategy "${extra[@]}" --name "$FIRST+reranker-$strategy$tag"
          done
        fi ;;
      ab-reranker|ab-retriever)  # issue 13: the same short training through the Hugging Face path and fast_training
        for fast in false true; do
          local name=${step#ab-}-qwen2.5-0.5b-ab-$([ $fast = true ] && echo fast || echo hf)
          if [ $step = ab-reranker ]; then
            h train sadiri-v2-reranker --train $TRAIN --out $S/m/$name --set backbone=$QWEN --set strategy=q+p+r \
              --set grad_accumulation=1 --set micro_batch=1 --set max_steps=${AB_STEPS:-12} --set fast_training=$fast ${AB_SET:-}
          else
            h train sadiri-v2-retriever --train $TRAIN --out $S/m/$name --set backbone=$QWEN --set projection_init=centered-unit \
              --set similarity=cosine --set authors_per_batch=16 --set lr=1e-4 --set max_steps=${AB_STEPS:-30} \
              --set fast_training=$fast ${AB_SET:-}
          fi
          trained $name
        done ;;
      qwen15-untrained) for C in "${COLLECTIONS[@]}"; do
          h run sadiri-v2-retriever --name qwen2.5-1.5b-untrained --set backbone=$QWEN15 --collection $C --runs-dir $R; done ;;
      qwen15-cosine-b16)
        local name=sadiri-v2-qwen2.5-1.5b-cosine-b16-lr1e-4
        local sets=(--set backbone=$QWEN15 --set projection_init=centered-unit --set similarity=cosine
                    --set authors_per_batch=16 --set lr=1e-4)
        h train sadiri-v2-retriever --train $TRAIN --out $S/m/$name "${sets[@]}" --set checkpoint_every=50
        trained $name
        for C in "${COLLECTIONS[@]}"; do
          h run sadiri-v2-retriever --name $name --model $S/m/$name/model "${sets[@]}" --collection $C --runs-dir $R; done ;;
    esac
  done
  echo "== done $(date +%T)"
}

pipeline "$@"
