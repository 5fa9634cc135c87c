"""Run by tests under torchrun (gloo on CPU): one training step of the SADIRI recipe on a tiny model."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from plugins.sadiri.config import SADIRIConfig  # noqa: E402
from plugins.sadiri.system import train  # noqa: E402
from tests.test_neural_systems import _train_docs  # noqa: E402

backbone, out, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
cfg = SADIRIConfig(backbone=backbone, max_length=64, authors_per_batch=12, epochs=1, lr=1e-3, tau=0.1,
                   hard_negatives=False, grad_checkpointing=False, device="cpu", max_steps=steps, cache=False)
train(cfg, _train_docs(), Path(out))
