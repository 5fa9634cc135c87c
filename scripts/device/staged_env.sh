# Sourced by the device scripts that read staged assets: the gguf wheel from .whl, models and
# caches under /root/stash, corpora from .stage/corpora; plugins from the tree only.
if [ ! -d /tmp/site/gguf ]; then python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl; fi
export PYTHONPATH=$PWD:/tmp/site AA_HARNESS_MODEL_DIR=/root/stash/models AA_HARNESS_CORPORA=$PWD/.stage/corpora \
       AA_HARNESS_CACHE=/root/stash/cache AA_HARNESS_DISABLE_PLUGIN_AUTOLOAD=1 PYTHONUNBUFFERED=1
TRAIN=.stage/train2/blogs-train.curated.jsonl.gz
SMOL=HuggingFaceTB/SmolLM2-135M-Instruct
