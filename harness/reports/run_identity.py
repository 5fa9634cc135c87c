"""What each run is: its backbone by full id with its quantization, its size, whether it was trained
here and on what, and how its recipe differs from the paper's.

Everything comes from the run's recorded config and model card, except facts no result records:
- what its system declares (SystemSpec.meta, read through harness.reports.system_catalog): whether it
  has a model at all, its default backbone, the parameter counts (the models' own cards) and the
  quantization of the GGUF files the runs loaded (the GGUF headers of the files whose fingerprints the
  runs recorded; a GGUF backbone is dequantized on load to the run's compute dtype and LoRA trains on
  top, QLoRA-style), and the paper recipe it follows (harness.reports.paper_recipes.PAPER_RECIPES);
- training data made before the corpora's decontamination: the sha256 prefixes listed in the
  decontamination list the leaderboard's record names (harness.reports.record), read by
  `load_before_decontamination`; the public sources of each training set, from its training-sets
  list, read by `load_training_sources`.

`differs_from_paper(result)` is the generated "differs from the paper" cell; the HTML site uses
the same function. Each function takes the catalog the pages read (default: the registered systems').
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.reports.paper_recipes import PAPER_RECIPES
from harness.reports.system_catalog import Catalog, registered
from harness.specs import SUBMITTED
from harness.system_meta import Backbone


def backbone_id(res: dict, catalog: Catalog | None = None) -> str:
    cfg = res.get("config", {})
    recorded = cfg.get("backbone") or res.get("extra", {}).get("backbone") or cfg.get("model_name")
    if recorded:
        return str(recorded)
    return (catalog or registered()).meta(res.get("system", "")).backbone  # the system's default


def _facts(res: dict, catalog: Catalog) -> Backbone | None:
    return catalog.backbone(res.get("system", ""), backbone_id(res, catalog))


def backbone_label(res: dict, catalog: Catalog | None = None) -> str:
    """The backbone's full id with its quantization, e.g. `Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF (Q4_K_M GGUF,
    dequantized to bf16)`; "—" for a system without a model."""
    catalog = catalog or registered()
    if not catalog.meta(res.get("system", "")).has_model:
        return "—"
    ident = backbone_id(res, catalog)
    info = _facts(res, catalog)
    if not ident:
        return "not recorded"
    fp8 = ", its projections in FP8 e4m3" if fp8_base(res) else ""
    if info is None or not info.quantization:
        return f"{ident} ({fp8.removeprefix(', its ')})" if fp8 else ident
    dtype = "bf16" if res.get("config", {}).get("bf16", True) else "float32"
    return f"{ident} ({info.quantization}, dequantized to {dtype}{fp8})"


def fp8_base(res: dict) -> bool:
    """Whether the run computed its frozen base's products in FP8 (config fp8, harness.neural.fast.fp8_linear)."""
    return bool(res.get("config", {}).get("fp8"))


def parameters(res: dict, catalog: Catalog | None = None) -> str:
    info = _facts(res, catalog or registered())
    return info.parameters if info and info.parameters else "—"


def model_card(res: dict) -> dict:
    return res.get("extra", {}).get("model_card") or {}


def trained_here(res: dict) -> bool:
    extra = res.get("extra", {})
    return bool(extra.get("trained") or model_card(res) or res.get("config", {}).get("first_stage"))


def load_before_decontamination(path: Path | None) -> dict[str, str]:
    """sha256 prefix of a training set -> why it predates decontamination, from the decontamination
    list at `path` (`{"before_decontamination": {prefix: why}}`; empty without one)."""
    if path is None:
        return {}
    from harness.data.jsonl import read_json
    from harness.errors import DataError

    obj = read_json(path, "decontamination record")  # bounded: not UTF-8, malformed or too deep is one line
    try:
        return {str(k): str(v) for k, v in obj["before_decontamination"].items()}
    except (KeyError, AttributeError, TypeError) as e:
        raise DataError(f"{path}: not a decontamination record ({type(e).__name__}: {e})") from None


def training_data(res: dict, before: dict[str, str]) -> str:
    if not trained_here(res):
        return "—"
    data = model_card(res).get("training_data") or {}
    sha = str(data.get("sha256", ""))
    if not sha:
        return "not recorded (trained before model cards)"
    text = f"{sha[:12]}, {data.get('authors', '?'):,} authors"
    if any(sha.startswith(prefix) for prefix in before):
        text += " (before decontamination)"
    return text


def _recipe(res: dict) -> dict:
    """The training recipe: the model card's, else the run's config."""
    card = model_card(res)
    return {**res.get("config", {}), **(card.get("recipe") or {}), **card}


def _fmt(x) -> str:
    if isinstance(x, float):
        return f"{x:g}"
    if isinstance(x, int):
        return f"{x:,}"
    return str(x)


def differs_from_paper(res: dict, sources: dict[str, list[str]] | None = None, catalog: Catalog | None = None) -> str:
    """The recipe items where this run differs from the paper's recipe its system follows (SystemMeta.recipe);
    "—" when none differ, "not in the paper" for a system that follows none. sources: sha256 prefix of a
    training set -> the sources it was drawn from (load_training_sources)."""
    catalog = catalog or registered()
    meta = catalog.meta(res.get("system", ""))
    paper = PAPER_RECIPES.get(meta.recipe)
    if paper is None:
        return "not in the paper"
    cfg = res.get("config", {})
    out = []
    for key in meta.own_settings:
        if key in cfg:
            out.append(f"{key} {_fmt(cfg[key])} (paper: not stated; this harness's setting)")
    size = _facts(res, catalog)
    if paper.get("backbone") and backbone_id(res, catalog) not in paper.get("backbone_ids", ()):
        here = size.parameters if size and size.parameters else "another"
        out.append(f"backbone {here} (paper: {paper['backbone']})")
    if paper.get("backbone_variant") and size and (size.variant or size.quantization):
        kind = ", ".join(x for x in (size.variant, size.quantization) if x)
        out.append(f"backbone {kind} (paper: {paper['backbone_variant']})")
    if paper.get("first_stage") and cfg.get("first_stage"):
        out.append(f"first stage {cfg['first_stage']} (paper: {paper['first_stage']})")
    if fp8_base(res):
        out.append("frozen base's products in FP8 e4m3 (paper: bf16)")
    if (model_card(res).get("recipe") or {}).get("fp8"):
        out.append("trained over an FP8 e4m3 frozen base (paper: bf16)")
    if not trained_here(res):
        if paper.get("trained"):
            out.append("not trained (pretrained backbone only)")
            if cfg.get("projection_init") is not None:
                out.append(f"an untrained projection ({cfg['projection_init']} init) added by this harness")
        return "; ".join(out) or "—"
    r = _recipe(res)
    gb = r.get("global_batch") or {}
    if paper.get("recipe_stated") is False:
        words = {"lr": "lr {}", "epochs": "{} epochs", "authors_per_batch": "{} authors a batch"}
        shown = ", ".join(w.format(_fmt(r[k])) for k, w in words.items() if k in r)
        out.append(f"recipe this harness's ({shown}; paper: not stated)")
    checks = [
        ("similarity", r.get("similarity"), paper.get("similarity")),
        ("lr", r.get("lr"), paper.get("lr")),
        ("epochs", r.get("epochs"), paper.get("epochs")),
        ("author fraction", r.get("author_fraction"), paper.get("author_fraction")),
    ]
    for name, ours, theirs in checks:
        if theirs is not None and ours is not None and ours != theirs:
            out.append(f"{name} {_fmt(ours)} (paper: {_fmt(theirs)})")
    if not gb:  # no model card: the run's config
        per_batch = cfg.get("authors_per_batch") or cfg.get("queries_per_batch")
        if per_batch:
            accum = int(cfg.get("grad_accumulation", 1))
            gb = {
                "per_optimizer_step": per_batch * accum,
                "grad_accumulation": accum,
                "unit": "authors" if cfg.get("authors_per_batch") else "queries",
            }
    per_step = gb.get("per_optimizer_step")
    if paper.get("global_batch") and per_step is not None:
        accum = gb.get("grad_accumulation", 1)
        p_batch, p_accum = paper["global_batch"], paper.get("grad_accumulation", 1)
        if (per_step, accum) != (p_batch * p_accum, p_accum):
            unit = gb.get("unit", "")
            gpus = int(r.get("world_size") or 1)
            gathered = ""
            if paper.get("per_gpu"):
                per, n = paper["per_gpu"]
                gathered = (
                    f"; {per} a GPU on {n} GPUs, whether gathered across GPUs not stated in the paper; "
                    f"here {gpus} GPU{'s' if gpus > 1 else ''}"
                )
            out.append(
                f"global batch {per_step // max(1, accum)} × accumulation {accum} {unit} "
                f"(paper: {p_batch} × {p_accum}{gathered})"
            )
    data = r.get("training_data") or {}
    authors = data.get("authors")
    if paper.get("training_authors") and authors:
        used = round(authors * float(r.get("author_fraction", 1.0)))
        out.append(f"training authors {used:,} (paper: {paper['training_authors']:,})")
    sha = str(data.get("sha256", ""))
    drawn = next((v for k, v in (sources or {}).items() if k and sha.startswith(k)), None)
    if paper.get("training_sources") and drawn:
        out.append(f"training sources {len(drawn)}: {', '.join(drawn)} (paper: {paper['training_sources']})")
    return "; ".join(out) or "—"


def load_training_sources(path: Path | None) -> dict[str, list[str]]:
    """sha256 prefix of a training set -> the public sources it was drawn from, from the training-sets
    list at `path` (`{"sets": {prefix: {"sources": [...]}}}`; empty without one)."""
    if path is None:
        return {}
    from harness.data.jsonl import read_json
    from harness.errors import DataError

    obj = read_json(path, "training-sets record")
    try:
        return {str(k): [str(x) for x in v["sources"]] for k, v in obj["sets"].items()}
    except (KeyError, AttributeError, TypeError) as e:
        raise DataError(f"{path}: not a training-sets record ({type(e).__name__}: {e})") from None


@dataclass(frozen=True)
class RunIdentity:
    run: str
    backbone: str
    parameters: str
    origin: str
    training_data: str
    differs: str


def submitted_by(res: dict) -> str:
    """Who submitted the rankings and what made them, as the submission recorded it (table-safe)."""
    sub = res.get("submission") or {}
    text = "submitted rankings" + (f" by {sub['submitter']}" if sub.get("submitter") else "")
    text += f": {sub['description']}" if sub.get("description") else ""
    text = text.replace("|", "/")
    return text if len(text) <= 160 else text[:159] + "…"


def run_identity(
    name: str,
    res: dict,
    before: dict[str, str],
    sources: dict[str, list[str]] | None = None,
    catalog: Catalog | None = None,
) -> RunIdentity:
    if res.get("system") == SUBMITTED:  # no code ran here: the submission says what it is
        return RunIdentity(name, "—", "—", submitted_by(res), "—", "not in the paper")
    catalog = catalog or registered()
    if not catalog.meta(res.get("system", "")).has_model:
        origin = "no model"
    elif res.get("config", {}).get("first_stage"):
        origin = f"trained here (reranks {res['config']['first_stage']})"
    else:
        origin = "trained here" if trained_here(res) else "pretrained, not trained here"
    return RunIdentity(
        name,
        backbone_label(res, catalog),
        parameters(res, catalog),
        origin,
        training_data(res, before),
        differs_from_paper(res, sources, catalog),
    )


def identity_table(
    runs: dict,
    names: list[str],
    before: dict[str, str],
    sources: dict[str, list[str]] | None = None,
    catalog: Catalog | None = None,
) -> str:
    """The "What each run is" table: one row per run name (its first collection's first seed)."""
    from harness.foundation.markdown_table import markdown_table

    catalog = catalog or registered()
    first: dict[str, dict] = {}
    for (_, name), res in sorted(runs.items()):
        first.setdefault(name, res[0])
    rows = []
    for name in names:
        if name in first:
            i = run_identity(name, first[name], before, sources, catalog)
            rows.append([i.run, i.backbone, i.parameters, i.origin, i.training_data, i.differs])
    table = markdown_table(
        rows,
        headers=[
            "run",
            "backbone",
            "parameters",
            "trained",
            "training data",
            "differs from the paper",
        ],
        disable_numparse=True,
    )
    note = ""
    if any("before decontamination" in r[4] for r in rows):
        reasons = sorted(set(before.values()))
        note = (
            '\n\n"before decontamination": the training set was curated from the training files as they were '
            "before near-copies of evaluation documents were removed from them, so these models saw some "
            "evaluation blogs; they are to be retrained. " + " ".join(reasons)
        )
    return table + note + "\n"


def reranker_backbones(runs: dict, catalog: Catalog | None = None) -> str:
    """One sentence naming the backbones the reranker runs used, beside those of the paper's recipes their
    systems follow."""
    catalog = catalog or registered()
    firsts = [res[0] for res in runs.values() if res[0].get("config", {}).get("first_stage")]
    ids = sorted({backbone_label(res, catalog) for res in firsts})
    if not ids:
        return ""
    recipes = sorted({catalog.meta(res.get("system", "")).recipe for res in firsts} & PAPER_RECIPES.keys())
    papers = [PAPER_RECIPES[r] for r in recipes if PAPER_RECIPES[r].get("backbone")]
    paper = "".join(
        f"The paper's reranker: {p['backbone']}"
        + (f" ({p['backbone_full_id']})" if p.get("backbone_full_id") else "")
        + ". "
        for p in papers
    )
    return f"Reranker backbone here: {'; '.join(f'`{i}`' for i in ids)}. {paper}"
