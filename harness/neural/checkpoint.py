"""Training checkpoints: the trainable weights, the optimizer, the random state (dropout) and a
JSON progress record, so a resumed run ends with the uninterrupted run's weights.

progress.json is written last, so its presence marks a complete checkpoint; both files are
replaced atomically, so a crash leaves the previous checkpoint intact.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from harness.foundation.atomic import atomic_open, atomic_write_text


def save_checkpoint(folder: Path, model: torch.nn.Module, optimizer, progress: dict) -> None:
    state = {
        "trainable": {n: p.detach().cpu() for n, p in model.named_parameters() if p.requires_grad},
        "optimizer": optimizer.state_dict(),
        "rng_cpu": torch.get_rng_state(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["rng_cuda"] = torch.cuda.get_rng_state()
    with atomic_open(Path(folder) / "state.pt", "wb") as f:
        torch.save(state, f)
    atomic_write_text(Path(folder) / "progress.json", json.dumps(progress))


def load_checkpoint(folder: Path, model: torch.nn.Module, optimizer) -> dict | None:
    """Restore weights and optimizer in place and return the progress record (None: no checkpoint)."""
    folder = Path(folder)
    if not (folder / "progress.json").is_file():
        return None
    from harness.data.jsonl import read_json
    from harness.errors import DataError

    progress = read_json(folder / "progress.json", "checkpoint progress record")
    if not isinstance(progress, dict) or not all(isinstance(progress.get(k, 0), int) for k in ("epoch", "step")):
        raise DataError(
            f"{folder / 'progress.json'}: not a checkpoint progress record (epoch and step as integers); "
            "delete the checkpoint folder to start over"
        )
    try:
        state = torch.load(folder / "state.pt", map_location="cpu", weights_only=True)
        params = dict(model.named_parameters())
        with torch.no_grad():
            for n, t in state["trainable"].items():
                params[n].copy_(t)
        optimizer.load_state_dict(state["optimizer"])
    except FileNotFoundError:
        raise DataError(
            f"{folder / 'state.pt'}: checkpoint weights not found beside progress.json; "
            "delete the checkpoint folder to start over"
        ) from None
    except Exception as e:  # torch raises many kinds for a truncated, foreign or forged file
        msg = str(e).splitlines()[0][:160] if str(e) else type(e).__name__
        raise DataError(
            f"{folder / 'state.pt'}: not a checkpoint of this model ({type(e).__name__}: {msg}); "
            "delete the checkpoint folder to start over"
        ) from None
    if "rng_cpu" in state:
        torch.set_rng_state(state["rng_cpu"])
    if "rng_cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["rng_cuda"])
    return progress
