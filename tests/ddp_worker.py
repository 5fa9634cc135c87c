"""Run by tests under torchrun (gloo on CPU): training steps of a recipe on a tiny model.

ddp_worker.py sadiri BACKBONE OUT STEPS              (SADIRI on a tiny BERT)
ddp_worker.py sadiri-v2 BACKBONE OUT STEPS           (SADIRI-v2 retriever: LoRA + projection on a tiny Qwen3)
ddp_worker.py sadiri-v2-reranker BACKBONE OUT STEPS  (the reranker: LoRA + head, 4 queries a batch, accumulation 2)
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.neural.test_neural_systems import _train_docs  # noqa: E402

system, backbone, out, steps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
common = dict(
    max_length=64,
    authors_per_batch=12,
    epochs=1,
    lr=1e-3,
    tau=0.1,
    hard_negatives=False,
    grad_checkpointing=False,
    device="cpu",
    max_steps=steps,
    cache=False,
)
if system == "sadiri":
    from plugins.sadiri.config import SADIRIConfig
    from plugins.sadiri.system import train

    train(SADIRIConfig(backbone=backbone, **common), _train_docs(), Path(out))
elif system == "sadiri-v2":
    from plugins.sadiri_v2.config import RetrieverConfig
    from plugins.sadiri_v2.retriever import train

    train(RetrieverConfig(backbone=backbone, lora_dropout=0.0, **common), _train_docs(), Path(out))
else:
    from plugins.sadiri_v2.config import RerankerConfig
    from plugins.sadiri_v2.reranker_training import train

    train(
        RerankerConfig(
            backbone=backbone,
            lora_dropout=0.0,
            max_query_tokens=32,
            max_candidate_tokens=32,
            negatives=3,
            strategy="r",
            author_fraction=1.0,
            lr=1e-3,
            queries_per_batch=4,
            grad_accumulation=2,
            grad_checkpointing=False,
            device="cpu",
            max_steps=steps,
        ),
        _train_docs(),
        Path(out),
        log=lambda *_: None,
    )
