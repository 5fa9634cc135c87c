"""Rewrite the results block of README.md from the verified committed runs.

The block sits between `<!-- results:start -->` and `<!-- results:end -->`. Its rows are the
runs named in ROWS (a choice of what the front page shows, not figures); every figure is
recomputed here: each result is verified against its rankings and split manifest first.
Run `python docs/gen_readme_results.py`; `--check` exits 1 when README.md is out of date
(tests/project/test_docs.py runs the check).
"""

from __future__ import annotations

import re
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
RECORD = ROOT / "leaderboards" / "record.toml"  # what the committed leaderboard is made from
COLLECTIONS = ("reddit-xsub", "blogs-xtopic", "pan19-en")
# The front page's rows, baselines first, then one row per system family at its best recipe.
ROWS = (
    "bm25",
    "char-ngram",
    "sbert",
    "luar-mpnet",
    "sadiri-mpnet",
    "qwen2.5-1.5b-untrained",
    "sadiri-v2-qwen2.5-1.5b-cosine-b16-lr1e-4",
    "sadiri-v2-qwen2.5-1.5b-cosine-b16-lr1e-4+reranker-q+p+r-b4-all-authors",
)
START, END = "<!-- results:start -->", "<!-- results:end -->"


def _import_harness() -> None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))


@cache
def record():
    """The committed leaderboard's record (harness.reports.record): its runs, manifests and registries."""
    _import_harness()
    from harness.reports.record import read_record

    return read_record(RECORD)


def record_dir() -> Path:
    """The built-in collections' committed split manifests, as the record names them."""
    return record().splits


@cache
def verified_run(collection: str, run: str) -> list[dict]:
    """The run's results in seed order, read through the harness's one verified reader; [] if none."""
    _import_harness()
    from harness.reports.stale import load_stale
    from harness.runs.verified import verified_results

    runs = record().runs
    entry = load_stale(record().registries.stale).get((collection, run))
    manifests = {(collection, run): entry.manifests} if entry else None  # a stale run: on the manifests it was made on
    found = (
        verified_results(runs, record_dir(), collection=collection, runs=[run], manifests_of=manifests)
        if (runs / collection / run).is_dir()
        else {}
    )
    return [res for _, res in found.get((collection, run), [])]


def is_stale(collection: str, run: str) -> bool:
    """Listed in the stale-runs registry: made on data since corrected, so not a current result."""
    _import_harness()
    from harness.reports.stale import load_stale

    return (collection, run) in load_stale(record().registries.stale)


def _identity(res: dict, before: dict[str, str], previous: str | None) -> list[str]:
    """System, backbone by full id (with quantization and size) and where its weights come from."""
    from harness.reports.run_identity import backbone_id, run_identity

    ident = run_identity(res["run_name"], res, before)
    hub_id = backbone_id(res)
    if ident.backbone == "—" or not ident.backbone.startswith(hub_id):
        backbone = ident.backbone
    else:
        backbone = f"`{hub_id}`{ident.backbone[len(hub_id) :]}, {ident.parameters}"
    origin = ident.origin
    if previous and res["config"].get("first_stage") == previous:
        origin = "trained here, reranking the row above"
    if "before decontamination" in ident.training_data:
        origin += " †"
    return [f"`{res['system']}`", backbone, origin]


def render() -> str:
    _import_harness()
    from harness.evaluation.metrics import mean_sd
    from harness.reports.run_identity import load_before_decontamination
    from harness.reports.stale import load_stale

    before = load_before_decontamination(record().registries.decontamination)
    stale = load_stale(record().registries.stale)
    lines = [
        START,
        "| system | backbone | weights | " + " | ".join(COLLECTIONS) + " |",
        "|---|---|---|" + "---|" * len(COLLECTIONS),
    ]
    why_stale: dict[str, set[str]] = {}  # reason -> the collections it is given for
    for previous, run in zip((None, *ROWS), ROWS):
        cells, label = [], None
        for collection in COLLECTIONS:
            if (collection, run) in stale:  # made on data since corrected, or with a defect since fixed
                cells.append("stale, rerun pending")
                reason = stale[(collection, run)].reason.removesuffix("; rerun pending")
                why_stale.setdefault(reason[0].lower() + reason[1:], set()).add(collection)
                results = verified_run(collection, run)
                label = label or (_identity(results[0], before, previous) if results else None)
                continue
            results = verified_run(collection, run)
            if not results:
                cells.append("not run")
                continue
            label = label or _identity(results[0], before, previous)
            mean, sd = mean_sd([r["metrics"]["success@8"] for r in results])
            spread = f" ± {100 * sd:.1f}" if len(results) > 1 else ""
            cells.append(f"{100 * mean:.1f}{spread}" + ("" if len(results) == 4 else f" (n={len(results)})"))
        if label:
            lines.append("| " + " | ".join(label + cells) + " |")
    notes = []
    if why_stale:  # explained where it shows, in one line
        reasons = "; ".join(f"{', '.join(sorted(c))}: {r}" for r, c in sorted(why_stale.items()))
        notes.append(
            f"*stale, rerun pending*: the run was made on data since corrected or with a defect since fixed "
            f"({reasons}), so it stays out of the tables until it is rerun ([stale runs](docs/leaderboard.md))."
        )
    if any(line.count(" †") for line in lines):
        notes.append(
            "† trained on data from before the corpora's decontamination (see the leaderboard's \"What each run is\")."
        )
    for note in notes:  # a paragraph each
        lines += ["", note]
    lines.append(END)
    return "\n".join(lines)


def rewrite(text: str, block: str) -> str:
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise SystemExit(f"{README}: no {START} … {END} block")
    return pattern.sub(lambda _: block, text)


def main(argv: list[str] | None = None) -> int:
    check = "--check" in (argv if argv is not None else sys.argv[1:])
    text = README.read_text(encoding="utf-8")
    new = rewrite(text, render())
    if check:
        if new != text:
            print("README.md's results block is out of date: run python docs/gen_readme_results.py", file=sys.stderr)
            return 1
        return 0
    README.write_text(new, encoding="utf-8")
    print("rewrote README.md's results block")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
