"""Trained models as addressable things: the model card `aa-harness train` writes, and the
content hash a run records instead of the model's path on some machine.

The card (`aa_model.json` in the model folder; a plugin's own loading fields stay beside it):

  card_version   1
  system         the registered system that trained it
  recipe         the config's recipe section (what the paper specifies; LoRA included; the
                 precision: bf16, and fp8 where the system offers it)
  training_run   how it was run (gradient checkpointing, checkpoints, step cap, micro-batch)
  global_batch   {unit, per_batch, grad_accumulation, per_optimizer_step}
  training_data  {sha256, documents, authors, files}: sha256 over (documentID, first author,
                 text) of every training document, sorted by documentID
  author_fraction  the share of the training authors the recipe used (1.0 for bi-encoders)
  seed, commit, device, world_size, steps, final_loss, trained_at
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path
from typing import Any, Mapping, Sequence

from harness.data.documents import Document
from harness.foundation.atomic import atomic_write_text

CARD = "aa_model.json"
CARD_VERSION = 1


def training_data_fingerprint(documents: Sequence[Document], files: Sequence[str | Path] = ()) -> dict[str, Any]:
    h = hashlib.sha256()
    for d in sorted(documents, key=lambda d: d.documentID):
        for part in (d.documentID, d.authorIDs[0] if d.authorIDs else "", d.fullText):
            h.update(part.encode("utf-8") + b"\0")
    return {
        "sha256": h.hexdigest(),
        "documents": len(documents),
        "authors": len({d.authorIDs[0] for d in documents if d.authorIDs}),
        "files": [Path(f).name for f in files],
    }


def model_card(
    *,
    system: str,
    sections: Mapping[str, Mapping[str, Any]],
    data: Mapping[str, Any],
    train_log: Mapping[str, Any],
    commit: str,
) -> dict[str, Any]:
    """The card from the config's sections, the training data's fingerprint and the trainer's log."""
    recipe = dict(sections.get("recipe", {}))
    unit = "queries" if "queries_per_batch" in recipe else "authors"
    per_batch = recipe.get("queries_per_batch", recipe.get("authors_per_batch"))
    accumulation = recipe.get("grad_accumulation", 1)
    steps = [e for e in train_log.get("log", []) if "loss" in e]
    return {
        "card_version": CARD_VERSION,
        "system": system,
        "recipe": recipe,
        "training_run": dict(sections.get("training run", {})),
        "global_batch": {
            "unit": unit,
            "per_batch": per_batch,
            "grad_accumulation": accumulation,
            "per_optimizer_step": per_batch * accumulation if per_batch else None,
        },
        "training_data": dict(data),
        "author_fraction": recipe.get("author_fraction", 1.0),
        "seed": recipe.get("seed"),
        "commit": commit,
        "device": train_log.get("device"),
        "world_size": train_log.get("world_size"),
        "steps": train_log.get("steps"),
        "final_loss": steps[-1]["loss"] if steps else None,
        "trained_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }


def write_model_card(model_dir: Path, card: Mapping[str, Any]) -> None:
    """Merge the card into the folder's aa_model.json (the plugin's own fields are kept)."""
    path = Path(model_dir) / CARD
    own = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    atomic_write_text(path, json.dumps({**own, **card}, indent=1) + "\n")


def content_sha256(folder: Path) -> str:
    """sha256 over every file of a model folder: relative path, then bytes, in path order."""
    folder = Path(folder)
    h = hashlib.sha256()
    for p in sorted(q for q in folder.rglob("*") if q.is_file()):
        h.update(p.relative_to(folder).as_posix().encode() + b"\0")
        with open(p, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 22), b""):
                h.update(chunk)
    return h.hexdigest()


def read_card(folder: Path) -> dict[str, Any] | None:
    """The folder's model card, or None; a malformed one is a DataError naming the file."""
    from harness.data.jsonl import read_json
    from harness.errors import DataError

    path = Path(folder) / CARD
    if not path.is_file():
        return None
    card = read_json(path, "model card")
    if not isinstance(card, dict):
        raise DataError(f"{path}: a model card must be a JSON object, got {type(card).__name__}")
    recipe = card.get("recipe", {})
    if "system" in card and not isinstance(card["system"], str) or not isinstance(recipe, dict):
        raise DataError(f"{path}: a model card's system must be a string and its recipe an object")
    ml = recipe.get("max_length")
    if ml is not None and (isinstance(ml, bool) or not isinstance(ml, int) or ml < 1):
        raise DataError(f"{path}: recipe.max_length must be a positive integer, got {ml!r}")
    if recipe.get("backbone") is not None and not isinstance(recipe["backbone"], str):
        raise DataError(f"{path}: recipe.backbone must be a string")
    return card


def check_card(
    system: str, config: Mapping[str, Any], model_dir: Any, card: Mapping[str, Any] | None, warn=None
) -> None:
    """The card belongs to this system and this backbone; a max-length mismatch is a warning.

    A card of another system, or of a model trained on another backbone, would make the result
    describe a model it was not made with: an error. Max length only changes how much of each
    text is read, so the run goes on with the config's value and says so.
    """
    from harness.errors import HarnessError

    if not card:
        return
    where = Path(str(model_dir)) / CARD
    if card.get("system") not in (None, system):
        raise HarnessError(
            f"{where}: a model card of system {card['system']!r}; this run is of system {system!r} "
            "(the wrong --model folder?)"
        )
    recipe = card.get("recipe", {})
    trained_on, runs_on = recipe.get("backbone"), config.get("backbone")
    if trained_on and runs_on and trained_on != runs_on:
        raise HarnessError(
            f"{where}: the model was trained on backbone {trained_on!r}; this run's backbone is "
            f"{runs_on!r} (--set backbone={trained_on})"
        )
    trained_fp8, runs_fp8 = bool(recipe.get("fp8", False)), bool(config.get("fp8", False))
    if trained_fp8 != runs_fp8 and "fp8" in config and warn is not None:
        warn(
            f"{where}: the model was trained over {'an FP8' if trained_fp8 else 'a bf16'} frozen base; this run "
            f"computes it in {'FP8' if runs_fp8 else 'bf16'} (the run's fp8={str(runs_fp8).lower()} is used; "
            f"--set fp8={str(trained_fp8).lower()} to match)"
        )
    trained_len, run_len = recipe.get("max_length"), config.get("max_length")
    if trained_len and run_len and trained_len != run_len and warn is not None:
        warn(
            f"{where}: the model was trained at max_length {trained_len}; this run reads {run_len} tokens per text "
            f"(the run's value is used; --set max_length={trained_len} to match)"
        )


def with_card_backbone(system: str, config_cls: type, overrides: Mapping[str, Any] | None, log=None) -> dict[str, Any]:
    """`overrides` with the backbone the model card records, when `model` names a trained folder of
    this system and no backbone is given: `run --model DIR` needs no `--set backbone=…`. A backbone
    given explicitly is kept (check_card then refuses one that differs from the card's)."""
    import dataclasses

    out = dict(overrides or {})
    folder = out.get("model")
    if "backbone" in out or not isinstance(folder, str) or not folder or not Path(folder).is_dir():
        return out
    if "backbone" not in {f.name for f in dataclasses.fields(config_cls)}:
        return out
    card = read_card(Path(folder))
    backbone = (card or {}).get("recipe", {}).get("backbone")
    if backbone and (card or {}).get("system") in (None, system):
        out["backbone"] = backbone
        if log is not None:
            log(f"{system}: backbone {backbone} (from the model card in {folder})")
    return out


def model_address(ref: Any) -> dict[str, Any] | None:
    """{"sha256", "card"} for a trained model folder (one holding aa_model.json or config.json); None otherwise."""
    if not isinstance(ref, str) or not ref or not Path(ref).is_dir():
        return None
    folder = Path(ref)
    card = read_card(folder)
    if card is None and not (folder / "config.json").is_file():
        return None
    return {"sha256": content_sha256(folder), "card": card}


def addressed_config(config: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(the config a run records, the model's address): a `model` folder is recorded as
    "sha256:<content hash>", so the result names the model, not where it lay."""
    out = dict(config)
    address = model_address(out.get("model"))
    if address:
        out["model"] = f"sha256:{address['sha256']}"
    return out, address


def model_id(card: Mapping[str, Any]) -> str:
    """A trained model's id from its card: `<system>-<16 hex>` over what decides the weights (the
    system, the recipe, the step cap and the training data's sha256), not over how, when, where or
    with which commit it was trained, so the same recipe on the same data has one id."""
    from harness.runs.later_keys import without_earlier_values

    recipe = without_earlier_values(card.get("recipe") or {})  # a later key at its earlier value keeps old ids
    ident = {
        "system": card.get("system"),
        "recipe": recipe,
        "max_steps": (card.get("training_run") or {}).get("max_steps", 0),
        "training_data": (card.get("training_data") or {}).get("sha256"),
    }
    digest = hashlib.sha256(json.dumps(ident, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return f"{card.get('system')}-{digest[:16]}"
