"""`aa-harness` (also `python -m harness`): systems, collections, split, run, leaderboard."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.errors import HarnessError
from harness.evaluation.splits import DEFAULT_AUTHOR_FRACTION, POOLS, SEEDS


def _registry():
    from harness.plugins import load_registry

    return load_registry()


def cmd_systems(args) -> int:
    from tabulate import tabulate

    reg = _registry()
    rows = [[s.name, ",".join(s.capabilities), s.description] for s in sorted(reg.systems.values(), key=lambda s: s.name)]
    print(tabulate(rows, headers=["system", "can", "description"], tablefmt="github"))
    return 0


def cmd_collections(args) -> int:
    from tabulate import tabulate

    reg = _registry()
    rows = [[c.name, c.data, c.description] for c in sorted(reg.collections.values(), key=lambda c: c.name)]
    print(tabulate(rows, headers=["collection", "data", "description"], tablefmt="github"))
    return 0


def cmd_split(args) -> int:
    from harness.evaluation.splits import (
        build_split,
        counts_table,
        get_split,
        write_manifest,
    )
    from harness.runs.run_job import open_collection

    reg = _registry()
    collection = open_collection(reg, args.collection, data_dir=args.data_dir, background=args.background)
    rule = _dissimilarity_arg(args)
    splits = []
    for seed in args.seeds:
        if args.overwrite:
            split = build_split(collection, seed, args.author_fraction, pool=args.pool, dissimilarity=rule)
            write_manifest(split, args.splits_dir)
        else:
            split = get_split(collection, seed, args.splits_dir, author_fraction=args.author_fraction, pool=args.pool,
                              dissimilarity=rule)
        splits.append(split)
        print(f"{collection.name} seed {seed}: sha256 {split.sha256[:16]}…", file=sys.stderr)
    print(counts_table(splits))
    if getattr(args, "closeness", False):
        from harness.evaluation.closeness import closeness_table

        print()
        print(closeness_table(collection, splits))
    return 0


def _dissimilarity_arg(args):
    """--max-needle-cosine T: the rule with threshold T (1 or more: no rule); absent: the collection's."""
    value = getattr(args, "max_needle_cosine", None)
    if value is None:
        return None
    if value >= 1:
        return False
    from harness.evaluation.dissimilarity import DissimilarityRule

    return DissimilarityRule(threshold=value)


def cmd_compare(args) -> int:
    from harness.reports.significance import compare_results, format_comparison, needed_authors
    from harness.runs.results import iter_results

    runs: dict[str, list[dict]] = {args.run_a: [], args.run_b: []}
    for _, res in iter_results(args.runs_dir):
        if res["collection"] == args.collection and res["run_name"] in runs:
            runs[res["run_name"]].append(res)
    for name, res in runs.items():
        if not res:
            raise HarnessError(f"no results for run {name!r} on {args.collection!r} under {args.runs_dir}")
    a, b = (sorted(runs[n], key=lambda r: r["seed"]) for n in (args.run_a, args.run_b))
    res = compare_results(a, b, args.splits_dir, resamples=args.resamples)
    print(format_comparison(args.run_a, args.run_b, res))
    n, sd, per_seed = needed_authors(a, b, args.splits_dir)
    print(f"\nPer-author sd of the Success@8 difference: {sd:.3f}; to detect a 5-point gap of this spread (alpha 0.05, "
          f"power 0.8) a test needs about {n} query authors (this collection has about {per_seed} per seed).")
    return 0


def cmd_topics(args) -> int:
    from harness.data.collection import read_documents
    from harness.data.topic_labels import TopicSettings, derive_topics, k_study, write_labels

    docs = read_documents(args.input)
    texts = {d: doc.fullText for d, doc in docs.items()}
    settings = TopicSettings(k=args.k[0], svd_dims=args.svd_dims, seed=args.seed)
    if len(args.k) > 1:
        from tabulate import tabulate

        authors = {d: doc.authorIDs for d, doc in docs.items()}
        rows = k_study(texts, args.k, settings, authors)
        print(tabulate(rows, headers="keys", tablefmt="github", floatfmt=".4f"))
        return 0
    labels = derive_topics(texts, settings)
    if args.out:
        write_labels(labels, args.out)
        print(f"wrote {args.out} (labels sha256 {labels.sha256[:16]}…)", file=sys.stderr)
    if args.labelled_out:
        import json

        from harness.atomic import atomic_open

        with atomic_open(args.labelled_out, "w", gz=str(args.labelled_out).endswith(".gz")) as f:
            for d, doc in docs.items():
                rec = {**doc.extra, "documentID": d, "authorIDs": list(doc.authorIDs), "fullText": doc.fullText,
                       "genre": labels.labels[d], "corpus_genre": doc.genre}
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
        print(f"wrote {args.labelled_out}: the input with genre = topic label", file=sys.stderr)
    sizes: dict[str, int] = {}
    for lab in labels.labels.values():
        sizes[lab] = sizes.get(lab, 0) + 1
    for lab in sorted(sizes):
        print(f"{lab}  {sizes[lab]:>6}  {' '.join(labels.top_terms[lab])}")
    return 0


def cmd_run(args) -> int:
    from harness.config import parse_set_args
    from harness.runs.run_job import RunJob, run_job

    overrides = parse_set_args(args.set)
    if args.model:
        overrides["model"] = args.model
    job = RunJob(systems=args.systems, collection=args.collection, seeds=args.seeds, overrides=overrides,
                 run_name=args.name, depth=args.depth, overwrite=args.overwrite, runs_dir=args.runs_dir,
                 splits_dir=args.splits_dir, data_dir=args.data_dir, background=args.background,
                 author_fraction=args.author_fraction, progress=not args.no_progress, pool=args.pool,
                 dissimilarity=_dissimilarity_arg(args))
    run_job(_registry(), job)
    return 0


def cmd_rerank(args) -> int:
    from harness.config import parse_set_args
    from harness.runs.rerank_job import RerankJob, rerank_job

    overrides = parse_set_args(args.set)
    if args.model:
        overrides["model"] = args.model
    job = RerankJob(system=args.system, first_stage=args.first_stage, collection=args.collection, seeds=args.seeds,
                    overrides=overrides, run_name=args.name, depth=args.depth, overwrite=args.overwrite,
                    runs_dir=args.runs_dir, splits_dir=args.splits_dir, data_dir=args.data_dir,
                    author_fraction=args.author_fraction)
    rerank_job(_registry(), job)
    return 0


def cmd_train(args) -> int:
    from harness.config import parse_set_args
    from harness.runs.train_job import train_job

    out = train_job(_registry(), args.system, args.train, args.out, parse_set_args(args.set))
    print(f"trained model: {out}")
    return 0


def cmd_curate(args) -> int:
    from harness.data.curation import CurationSettings, curate

    settings = CurationSettings(min_words=args.min_words, min_docs=args.min_docs, max_docs=args.max_docs,
                                max_cosine=args.max_cosine, sbert_model=args.sbert_model, ner=args.ner,
                                device=args.device)
    from harness.runs.systems import text_embedder

    embed = text_embedder(_registry(), settings.embedder, {"model": settings.sbert_model, "device": settings.device,
                                                           "batch_size": settings.batch_size})
    report = curate(args.input, args.out, settings, embed=embed)
    for step in report["steps"]:
        print(f"{step['step']:>12}: removed {step['removed_documents']:>6} documents, {step['removed_authors']:>5} authors; "
              f"{step['documents']:>6} documents by {step['authors']:>5} authors remain")
    return 0


def cmd_leaderboard(args) -> int:
    from harness.reports.leaderboard import write_leaderboards

    written = write_leaderboards(args.runs_dir, args.out, plots=not args.no_plots)
    for p in written:
        print(f"wrote {p}", file=sys.stderr)
    print((Path(args.out) / "main.md").read_text(encoding="utf-8"))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="aa-harness", description="Benchmark harness for cross-genre authorship attribution.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sub.add_parser("systems", help="list registered systems").set_defaults(fn=cmd_systems)
    sub.add_parser("collections", help="list registered collections").set_defaults(fn=cmd_collections)

    def data_args(sp):
        sp.add_argument("--collection", default="demo", help="registered name, or a canonical JSONL(.gz) path (default: demo)")
        sp.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS), help="split seeds (default: 0 1001 2001 3001)")
        sp.add_argument("--data-dir", help="data folder for the collection (else its environment variable)")
        sp.add_argument("--background", nargs="*", default=[], help="extra background JSONL files (with a path collection)")
        sp.add_argument("--author-fraction", type=float, default=None,
                        help="share of foreground authors sampled per seed (default: the collection's, "
                             f"else {DEFAULT_AUTHOR_FRACTION})")
        sp.add_argument("--pool", choices=POOLS, default=None,
                        help="candidate pool: paper (Appendix B: sampled authors' other-genre documents + background) "
                             "or all (also the foreground authors not sampled); default: the collection's, else all")
        sp.add_argument("--max-needle-cosine", type=float, default=None, metavar="T",
                        help="dissimilarity rule: drop queries with a needle at word TF-IDF cosine >= T "
                             "(1: no rule; default: the collection's)")
        sp.add_argument("--splits-dir", type=Path, default=Path("splits"), help="split manifests folder (default: splits)")

    sp = sub.add_parser("split", help="build (or check) split manifests and print the counts table")
    data_args(sp)
    sp.add_argument("--overwrite", action="store_true", help="rebuild manifests even if they exist")
    sp.add_argument("--closeness", action="store_true",
                    help="also print how close the haystack is to the queries (LSA nearest neighbours)")
    sp.set_defaults(fn=cmd_split)

    sp = sub.add_parser("compare", help="paired significance test of two runs on one collection (pooled seeds)")
    sp.add_argument("run_a", metavar="RUN_A")
    sp.add_argument("run_b", metavar="RUN_B")
    sp.add_argument("--collection", required=True)
    sp.add_argument("--runs-dir", type=Path, default=Path("leaderboards/runs"))
    sp.add_argument("--splits-dir", type=Path, default=Path("splits"),
                    help="manifests, for the (seed, author) clusters (default: splits)")
    sp.add_argument("--resamples", type=int, default=10000)
    sp.set_defaults(fn=cmd_compare)

    sp = sub.add_parser("topics", help="derive per-document topic labels for a single-genre corpus (or compare k)")
    sp.add_argument("--input", nargs="+", required=True, help="canonical JSONL(.gz) files")
    sp.add_argument("--k", type=int, nargs="+", default=[20], help="topics; several values: print the k study")
    sp.add_argument("--svd-dims", type=int, default=100)
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--out", type=Path, help="labels JSON (ids, labels, settings, fingerprint)")
    sp.add_argument("--labelled-out", type=Path,
                    help="the input rewritten with genre = topic label (keep it outside the repository)")
    sp.set_defaults(fn=cmd_topics)

    sp = sub.add_parser("run", help="run systems on a collection's splits and write results")
    sp.add_argument("systems", nargs="+", metavar="SYSTEM")
    data_args(sp)
    sp.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a system config value (repeatable)")
    sp.add_argument("--name", help="run name (default: the system name); results go to runs/<collection>/<name>/")
    sp.add_argument("--model", help="a trained model folder (the same as --set model=DIR)")
    sp.add_argument("--depth", type=int, default=100, help="ranking depth kept per query (default 100)")
    sp.add_argument("--overwrite", action="store_true", help="recompute results that are up to date")
    sp.add_argument("--runs-dir", type=Path, default=Path("leaderboards/runs"))
    sp.add_argument("--no-progress", action="store_true")
    sp.set_defaults(fn=cmd_run)

    sp = sub.add_parser("rerank", help="rescore a first-stage run's top k with a reranker, per seed")
    sp.add_argument("system", metavar="SYSTEM")
    data_args(sp)
    sp.add_argument("--first-stage", required=True, help="run name of the first stage (its rankings are read)")
    sp.add_argument("--depth", type=int, default=100, help="how many first-stage candidates to rescore (default 100)")
    sp.add_argument("--model", help="the trained reranker folder (the same as --set model=DIR)")
    sp.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a config value (repeatable)")
    sp.add_argument("--name", help="run name (default: <first stage>+<system>-<strategy>)")
    sp.add_argument("--overwrite", action="store_true")
    sp.add_argument("--runs-dir", type=Path, default=Path("leaderboards/runs"))
    sp.set_defaults(fn=cmd_rerank)

    sp = sub.add_parser("train", help="train a system on canonical JSONL training data")
    sp.add_argument("system", metavar="SYSTEM")
    sp.add_argument("--train", nargs="+", required=True, help="canonical JSONL(.gz) training files (e.g. curated blogs)")
    sp.add_argument("--out", type=Path, required=True, help="output folder: model/, train_log.json, checkpoint/")
    sp.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a config value (repeatable)")
    sp.set_defaults(fn=cmd_train)

    sp = sub.add_parser("curate", help="the paper's training-data curation (length, author counts, dissimilar pair, PII)")
    sp.add_argument("--input", nargs="+", required=True, help="canonical JSONL(.gz) files")
    sp.add_argument("--out", type=Path, required=True, help="curated JSONL.gz; a .report.json is written beside it")
    sp.add_argument("--min-words", type=int, default=350)
    sp.add_argument("--min-docs", type=int, default=2)
    sp.add_argument("--max-docs", type=int, default=50)
    sp.add_argument("--max-cosine", type=float, default=0.2, help="keep an author's most dissimilar pair if below this")
    sp.add_argument("--sbert-model", default="sentence-transformers/all-mpnet-base-v2")
    sp.add_argument("--ner", default="spacy", choices=["spacy", "none"], help="person-name detection (none: patterns only)")
    sp.add_argument("--device", default="auto")
    sp.set_defaults(fn=cmd_curate)

    from harness.neural.fast.bench.cli import add_parser as add_bench_parser

    add_bench_parser(sub)

    sp = sub.add_parser("leaderboard", help="regenerate leaderboards/*.md and plots from the run files")
    sp.add_argument("--runs-dir", type=Path, default=Path("leaderboards/runs"))
    sp.add_argument("--out", type=Path, default=Path("leaderboards"))
    sp.add_argument("--no-plots", action="store_true")
    sp.set_defaults(fn=cmd_leaderboard)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except HarnessError as e:
        print(f"aa-harness: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("aa-harness: interrupted; finished seeds are kept, a rerun continues from there", file=sys.stderr)
        return 130
