"""The trained models in the store (`aa-harness models`): each under its id, with its card."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.foundation import locations


def stored_models(store: Path | None = None) -> list[tuple[str, Path, dict[str, Any]]]:
    """(id, model folder, card) of every model in the store, by id; a folder whose card does not
    give its id is left out (an unfinished or altered copy)."""
    from harness.errors import HarnessError
    from harness.runs.model_cards import model_id, read_card

    root = Path(store or locations.store_dir()) / "models"
    out = []
    for folder in sorted(root.glob("*/model")) if root.is_dir() else []:
        try:
            card = read_card(folder)
        except HarnessError:
            continue
        if card and model_id(card) == folder.parent.name:
            out.append((folder.parent.name, folder, card))
    return out
