"""mkdocs hooks: publish the generated leaderboard pages inside the site and fill generated blocks.

The leaderboard pages (`*.md`, their plots, `collections/*.md`) are written by `aa-harness
leaderboard` into the pages folder `leaderboards/record.toml` names (`leaderboards/pages/`); the site
serves them as they are under that path, so the manual links to the figures instead of copying them. A page may hold a marker line
`<!-- generated: NAME -->`, replaced at build time by the block `GENERATED[NAME]()` returns.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent.parent
MARKER = re.compile(r"^<!-- generated: ([a-z0-9-]+) -->$", re.M)


def _board() -> Path:
    """The committed leaderboard's pages folder, as its record names it."""
    _import_harness()
    return _sibling("gen_readme_results").record().pages


def _board_files() -> list[Path]:
    board = _board()
    pages = sorted(board.glob("*.md")) + sorted(board.glob("collections/*.md"))
    images = sorted(board.glob("*.png")) + sorted(board.glob("collections/*.png"))
    return pages + images


def on_config(config):
    """List the generated per-collection pages in the nav, under the generated pages."""
    pages = [{p.stem: p.relative_to(ROOT).as_posix()} for p in sorted(_board().glob("collections/*.md"))]
    for section in config.nav or []:
        if isinstance(section, dict) and "Generated pages" in section and pages:
            section["Generated pages"].append({"Per collection": pages})
    return config


def on_files(files, config):
    for path in _board_files():
        uri = path.relative_to(ROOT).as_posix()
        files.append(File.generated(config, uri, abs_src_path=str(path)))
    return files


def _import_harness() -> None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))


def _sibling(name: str):
    """A generator script beside this file (docs/ is not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"aa_docs_{name}", Path(__file__).with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _record_dir() -> Path:
    return _sibling("gen_readme_results").record_dir()


def _manifests():
    """The built-in collections' committed split manifests, sorted by collection and seed (not the earlier
    manifests kept under another folder name only so that the runs made on them still verify)."""
    import json

    from harness.evaluation.manifests import read_manifest

    paths = sorted(_record_dir().glob("*/seed-*.json"))
    return [read_manifest(p) for p in paths if json.loads(p.read_text(encoding="utf-8"))["collection"] == p.parent.name]


def split_counts() -> str:
    from harness.evaluation.split_counts import counts_table

    return counts_table(_manifests())


def seed_overlap() -> str:
    """Per collection: how many distinct documents and authors the pooled seeds' queries are."""
    from collections import defaultdict

    from tabulate import tabulate

    pooled: dict[str, list] = defaultdict(list)
    for split in _manifests():
        pooled[split.collection].append(split)
    rows = []
    for name, splits in sorted(pooled.items()):
        queries = [q for s in splits for q in s.queries]
        authors = {a for q in queries for a in q.authorIDs}
        rows.append(
            [
                name,
                " ".join(str(s.seed) for s in splits),
                splits[0].builder.get("author_fraction", "—"),
                len(queries),
                len({q.documentID for q in queries}),
                len(authors),
            ]
        )
    headers = [
        "collection",
        "seeds",
        "author fraction",
        "queries, pooled",
        "distinct query documents",
        "distinct query authors",
    ]
    return tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)


def unit_example() -> str:
    """char-ngram vs bm25 on reddit-xsub, clustered by author across seeds and, for contrast, by (seed, author)."""
    from tabulate import tabulate

    from harness.evaluation.significance import compare_ranks
    from harness.reports.significance import _paired_keys, p_text

    readme = _sibling("gen_readme_results")
    a, b = (readme.verified_run("reddit-xsub", run) for run in ("char-ngram", "bm25"))
    ra, rb, clusters = _paired_keys(a, b, _record_dir())
    rows = []
    for unit, cl in (
        ("query author across all seeds", clusters),
        ("(seed, query author)", {k: (k[0], c) for k, c in clusters.items()}),
    ):
        r = compare_ranks(ra, rb, cl)["success@8"]
        rows.append(
            [
                unit,
                r.n_clusters,
                f"{100 * r.diff:+.1f}",
                f"[{100 * r.ci95[0]:+.1f}, {100 * r.ci95[1]:+.1f}]",
                p_text(r),
            ]
        )
    return tabulate(
        rows,
        headers=["cluster", "clusters", "Success@8 difference", "95% interval", "p"],
        tablefmt="github",
        disable_numparse=True,
    )


RETRIEVER = "sadiri-v2-qwen2.5-1.5b-cosine-b16-lr1e-4"
RERANKER = RETRIEVER + "+reranker-{}-b4-all-authors"
# The paper's orderings, each as one paired comparison of two committed runs (A − B).
CLAIMS = (
    ("trained SADIRI-v2 retriever > character n-grams", RETRIEVER, "char-ngram"),
    ("SADIRI-v2 ≥ SADIRI", RETRIEVER, "sadiri-mpnet"),
    ("SADIRI ≥ LUAR", "sadiri-mpnet", "luar-mpnet"),
    ("bigger backbone ≥ smaller (1.5B − 0.5B)", RETRIEVER, "sadiri-v2-qwen2.5-0.5b-cosine-b16-lr1e-4"),
    ("reranker, all three pools > retriever", RERANKER.format("q+p+r"), RETRIEVER),
    ("retriever > reranker, n(d_q) only", RETRIEVER, RERANKER.format("q")),
    ("all three pools > n(r) + n(d_q)", RERANKER.format("q+p+r"), RERANKER.format("q+r")),
    ("all three pools > n(r) + n(d_q+)", RERANKER.format("q+p+r"), RERANKER.format("p+r")),
)
CLAIM_COLLECTIONS = ("reddit-xsub", "blogs-xtopic", "pan19-en")


def paper_claims() -> str:
    """Each claim's Success@8 difference in points with its author-cluster interval and p, per collection."""
    from tabulate import tabulate

    from harness.reports.significance import compare_results, p_text

    readme = _sibling("gen_readme_results")
    rows = []
    for claim, a_name, b_name in CLAIMS:
        row = [claim, f"`{a_name}` − `{b_name}`"]
        for collection in CLAIM_COLLECTIONS:
            if readme.is_stale(collection, a_name) or readme.is_stale(collection, b_name):
                row.append("stale, rerun pending")
                continue
            a, b = readme.verified_run(collection, a_name), readme.verified_run(collection, b_name)
            if not a or not b:
                row.append("not run")
                continue
            r = compare_results(list(a), list(b), _record_dir())["success@8"]
            row.append(
                f"{100 * r.diff:+.1f} [{100 * r.ci95[0]:+.1f}, {100 * r.ci95[1]:+.1f}], {p_text(r)}"
                f" ({r.n_clusters} authors)"
            )
        rows.append(row)
    return tabulate(rows, headers=["claim", "A − B", *CLAIM_COLLECTIONS], tablefmt="github", disable_numparse=True)


def locations_table() -> str:
    """Every location with its flag, environment variable and default, from the resolver itself."""
    import os

    from tabulate import tabulate

    from harness.foundation import locations

    placeholders = {locations.HOME_ENV: "<home>", locations.CACHE_ENV: "<cache>", "HF_HUB_CACHE": "<HF cache>"}
    cleared = [
        locations.RUNS_ENV,
        locations.CORPORA_ENV,
        locations.HRS_ENV,
        locations.MODEL_DIR_ENV,
        locations.BENCH_ENV,
    ]
    saved = {k: os.environ.get(k) for k in [*placeholders, *cleared]}
    try:
        for k in cleared:
            os.environ.pop(k, None)
        os.environ.update(placeholders)
        found = locations.all_locations()
        record = str(locations.record_splits_dir())
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    rows = []
    for loc in found:
        default = "package data `harness.splits` (`splits/` in a checkout)" if loc.path == record else f"`{loc.path}`"
        if loc.env == locations.HOME_ENV:
            default = "the per-user data folder (platformdirs)"
        if loc.env == locations.CACHE_ENV:
            default = "the per-user cache folder (platformdirs)"
        if loc.env == locations.HRS_ENV:
            default = "none: restricted data, named by you"
        if loc.env == locations.MODEL_DIR_ENV:
            default = ", then ".join(f"`{part}`" if part.startswith("<") else part for part in loc.path.split(" then "))
        rows.append([loc.what, f"`{loc.flag}`" if loc.flag else "–", f"`{loc.env}`" if loc.env else "–", default])
    return tabulate(
        rows, headers=["location", "flag", "environment", "default"], tablefmt="github", disable_numparse=True
    )


def _registry():
    from harness.plugins import load_registry, plugin_manager

    return load_registry(plugin_manager(entrypoints=False))


def systems_table() -> str:
    from tabulate import tabulate

    rows = [
        [f"`{s.name}`", ", ".join(s.capabilities), "yes" if s.trainer else "no", s.description]
        for s in sorted(_registry().systems.values(), key=lambda s: s.name)
    ]
    return tabulate(rows, headers=["system", "can", "trainable", "what"], tablefmt="github", disable_numparse=True)


def collections_table() -> str:
    from tabulate import tabulate

    rows = [[f"`{c.name}`", c.description] for c in sorted(_registry().collections.values(), key=lambda c: c.name)]
    return tabulate(rows, headers=["collection", "what"], tablefmt="github", disable_numparse=True)


def recipe_defaults() -> str:
    """Each built-in system's --set keys with their defaults, read from its config dataclass."""
    from tabulate import tabulate

    from harness.config import config_fields
    from harness.specs import load_object

    blocks = []
    for spec in sorted(_registry().systems.values(), key=lambda s: s.name):
        rows = [
            [f"`{f['key']}`", f"`{f['default']!r}`", f["help"].replace("|", "/")]
            for f in config_fields(load_object(spec.config))
        ]
        table = tabulate(rows, headers=["--set key", "default", "help"], tablefmt="github", disable_numparse=True)
        body = "\n".join("    " + line for line in table.splitlines())
        blocks.append(f'??? note "`{spec.name}`: {len(rows)} keys"\n\n{body}\n')
    return "\n".join(blocks)


def _reported(columns, rows) -> str:
    from tabulate import tabulate

    return tabulate(
        [list(r) for r in rows], headers=list(columns), tablefmt="github", floatfmt=".1f", disable_numparse=True
    )


def reported_table1() -> str:
    from plugins.paper import reported

    return _reported(reported.TABLE1_COLUMNS, reported.TABLE1)


def reported_table2() -> str:
    from plugins.paper import reported

    return _reported(reported.TABLE2_COLUMNS, reported.TABLE2)


GENERATED = {
    "split-counts": split_counts,
    "seed-overlap": seed_overlap,
    "unit-example": unit_example,
    "paper-claims": paper_claims,
    "systems": systems_table,
    "locations": locations_table,
    "collections": collections_table,
    "recipe-defaults": recipe_defaults,
    "reported-table1": reported_table1,
    "reported-table2": reported_table2,
}


def on_page_markdown(markdown, page, config, files):
    _import_harness()

    def fill(match: re.Match) -> str:
        name = match.group(1)
        if name not in GENERATED:
            raise KeyError(f"{page.file.src_uri}: unknown generated block {name!r}")
        return GENERATED[name]()

    return MARKER.sub(fill, markdown)
