"""`aa-harness` (also `python -m harness`): systems, collections, split, run, leaderboard."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback
from pathlib import Path

from harness.errors import HarnessError
from harness.evaluation.split_settings import DEFAULT_AUTHOR_FRACTION, POOLS, SEEDS
from harness.foundation import atomic, locations  # noqa: F401  (atomic: the umask is read before any plugin runs)

MAX_RESAMPLES = 1_000_000  # compare --resamples: more would run for hours and hold gigabytes


def _registry():
    from harness.plugins import load_registry

    return load_registry()


def cmd_systems(args) -> int:
    from tabulate import tabulate

    reg = _registry()
    if args.name:
        return _describe_system(reg.system(args.name))
    rows = [
        [s.name, ",".join(s.capabilities), s.description] for s in sorted(reg.systems.values(), key=lambda s: s.name)
    ]
    print(tabulate(rows, headers=["system", "can", "description"], tablefmt="github"))
    print("\n`aa-harness systems NAME` lists a system's --set keys with their types, defaults and help.")
    return 0


def _describe_system(spec) -> int:
    """A system's spec and its config keys (type, default, help), read from the config dataclass (no torch)."""
    from tabulate import tabulate

    from harness.config import config_fields
    from harness.specs import load_object

    cls = load_object(spec.config)
    print(f"{spec.name}: {spec.description}")
    origin = f"{spec.distribution} {spec.version}".strip() or "?"
    print(
        f"can: {', '.join(spec.capabilities)}; trainable: {'yes (aa-harness train)' if spec.trainer else 'no'}; "
        f"plugin: {spec.plugin} ({origin}); config: {spec.config}"
    )
    rows = [
        [f["key"], f["type"].replace(" | ", " or "), repr(f["default"]), f["help"].replace("|", "/")]
        for f in config_fields(cls)
    ]
    print()
    print(tabulate(rows, headers=["--set key", "type", "default", "help"], tablefmt="github", disable_numparse=True))
    print(
        "\nValues are read by the key's type: int/float as numbers; bool as true/false, 1/0, yes/no, on/off; "
        "`none` for an optional key; tuples as comma-separated items; lists and dicts as JSON. An unknown key is an error."
    )
    return 0


FOUND = {True: "yes", False: "NO", None: "?"}


def cmd_collections(args) -> int:
    """A table narrow enough for a terminal: each collection, whether its data was found, and where
    (or what is missing); how to point at missing data once below it; descriptions under NAME."""
    import re
    import textwrap

    from tabulate import tabulate

    reg = _registry()
    if args.name:
        spec = reg.collection(args.name)
        found, where = spec.find(args.data_dir)
        print(textwrap.fill(f"{spec.name}: {spec.description}", width=100, subsequent_indent="  "))
        print(textwrap.fill(f"data found: {FOUND[found]}; {where}", width=100, subsequent_indent="  "))
        return 0
    rows: list[list[str]] = []
    hints: dict[str, list[str]] = {}  # how to point at missing data -> the collections it serves
    for c in sorted(reg.collections.values(), key=lambda c: c.name):
        found, where = c.find(args.data_dir)
        # "<what is missing>; <how to point at it>": the how below the table, once for the collections it serves
        what, *how = re.split(r"[;:] (?=pass |set )", where, maxsplit=1)
        if how:
            hints.setdefault(how[0], []).append(c.name)
        rows.append([c.name, FOUND[found], what])
    print(
        tabulate(
            rows, headers=["collection", "data", "where (or what is missing)"], tablefmt="github", disable_numparse=True
        )
    )
    if hints:
        print("\nMissing data:")
    for hint, names in hints.items():
        print(
            textwrap.fill(
                f"{', '.join(names)}: {hint}",
                width=100,
                initial_indent="- ",
                subsequent_indent="  ",
                break_on_hyphens=False,
            )
        )
    print("\n`aa-harness collections NAME` describes one collection.")
    return 0


def cmd_split(args) -> int:
    from harness.evaluation.manifests import manifest_path, write_manifests
    from harness.evaluation.split_builder import build_split
    from harness.evaluation.split_counts import counts_table
    from harness.evaluation.split_store import get_splits
    from harness.runs.job import open_collection, split_places, unique_seeds

    reg = _registry()
    collection = open_collection(
        reg, args.collection, data_dir=args.data_dir, background=args.background, name=args.name_collection
    )
    places = split_places(reg, args.collection, args.runs_dir, args.splits_dir)
    rule = _dissimilarity_arg(args)
    seeds = unique_seeds(args.seeds)
    if args.overwrite:  # every seed builds before any manifest is written
        splits = [
            build_split(
                collection,
                seed,
                args.author_fraction,
                pool=args.pool,
                dissimilarity=rule,
                max_per_author_genre=args.max_per_author_genre,
            )
            for seed in seeds
        ]
        if places.record is not None:  # the record is compared with, never written over
            _check_against_record(splits, places.record)
        write_manifests(
            [
                s
                for s in splits
                if places.record is None or not manifest_path(places.record, s.collection, s.seed).exists()
            ],
            places.folder,
        )
    else:
        splits = get_splits(
            collection,
            seeds,
            places.folder,
            record=places.record,
            author_fraction=args.author_fraction,
            pool=args.pool,
            dissimilarity=rule,
            max_per_author_genre=args.max_per_author_genre,
        )
    for split in splits:
        where = manifest_path(places.folder, collection.name, split.seed)
        if places.record is not None and manifest_path(places.record, collection.name, split.seed).exists():
            where = manifest_path(places.record, collection.name, split.seed)
        print(f"{collection.name} seed {split.seed}: sha256 {split.sha256[:16]}… ({where})", file=sys.stderr)
    print(counts_table(splits))
    if getattr(args, "closeness", False):
        from harness.evaluation.closeness import closeness_table

        print()
        print(closeness_table(collection, splits))
    return 0


def _check_against_record(splits, record: Path) -> None:
    """A rebuilt manifest of a built-in collection must equal the record's; the record is written
    only by naming its folder with --splits-dir, in a checkout."""
    from harness.evaluation.manifests import manifest_path, read_manifest

    for split in splits:
        path = manifest_path(record, split.collection, split.seed)
        if path.exists() and read_manifest(path).sha256 != split.sha256:
            raise HarnessError(
                f"{path}: the rebuilt manifest differs from the harness's record (sha256 "
                f"{split.sha256[:16]}…); the record is changed only with --splits-dir naming its folder "
                "in a checkout"
            )


def _dissimilarity_arg(args):
    """--max-needle-cosine T: the rule with threshold T (1 or more: no rule); absent: the collection's."""
    value = getattr(args, "max_needle_cosine", None)
    if value is None:
        return None
    if value >= 1:
        return False
    from harness.evaluation.dissimilarity import DissimilarityRule

    return DissimilarityRule(threshold=value)


def _results_by_run(
    runs_dir: Path, collection: str, names, splits_dir=None, loaded=None
) -> dict[str, list[tuple[Path, dict]]]:
    """Each named run's verified results on `collection`, (path, result) in seed order; an error
    names a run with none."""
    from harness.runs.verified import verified_results

    got = verified_results(runs_dir, splits_dir, collection=collection, runs=names, loaded=loaded)
    found = {name: got.get((collection, name), []) for name in names}
    for name, results in found.items():
        if not results:
            raise HarnessError(f"no results for run {name!r} on {collection!r} under {runs_dir}")
    return found


def cmd_compare(args) -> int:
    from harness.reports.significance import (
        compare_results,
        format_comparison,
        needed_authors,
        paired_author_macro,
    )

    if not 1 <= args.resamples <= MAX_RESAMPLES:
        raise HarnessError(f"--resamples {args.resamples}: give 1 to {MAX_RESAMPLES:,}")
    runs_dir = locations.runs_dir(args.runs_dir)
    manifests = locations.manifest_dirs(runs_dir, args.splits_dir)
    if args.run_b is None and args.against is None:
        raise HarnessError("compare needs RUN_B, or --against DIR to compare RUN_A with its namesake there")
    if args.against is not None and not args.against.is_dir():
        raise HarnessError(f"--against {args.against}: no such folder")
    # each run read, verified, from its own folder: RUN_B from --against where given (a rerun against a record)
    folder_b = runs_dir if args.against is None else args.against
    name_a, name_b = args.run_a, args.run_b or args.run_a
    a, b = (
        [res for _, res in _results_by_run(folder, args.collection, (name,), args.splits_dir)[name]]
        for folder, name in ((runs_dir, name_a), (folder_b, name_b))
    )
    label_a, label_b = name_a, name_b
    if name_a == name_b and args.against is not None:
        print(f"A: {name_a} in {runs_dir}\nB: {name_b} in {folder_b}\n")
        label_a, label_b = "A", "B"
    res = compare_results(a, b, manifests, resamples=args.resamples)
    print(format_comparison(label_a, label_b, res))
    macro_a, macro_b, authors = paired_author_macro(a, b, manifests)
    s8 = res["success@8"]
    print(
        f"\nSuccess@8 pooled over the paired queries: {label_a} {100 * s8.mean_a:.1f}, {label_b} "
        f"{100 * s8.mean_b:.1f}; author-macro (each query author's mean, then the mean over the {authors} "
        f"authors): {label_a} {100 * macro_a:.1f}, {label_b} {100 * macro_b:.1f}."
    )
    n, sd, have = needed_authors(a, b, manifests)
    print(
        f"\nPer-author sd of the Success@8 difference: {sd:.3f}; to detect a 5-point gap of this spread (alpha 0.05, "
        f"power 0.8) a test needs about {n} independent query authors (these runs have {have})."
    )
    return 0


def cmd_topic_share(args) -> int:
    from statistics import mean, pstdev

    from tabulate import tabulate

    from harness.evaluation.manifests import find_manifest, read_manifest
    from harness.reports.topic_share import same_genre_share
    from harness.runs.job import open_collection
    from harness.runs.results import read_rankings

    if args.k < 1:
        raise HarnessError(f"--k {args.k}: give at least 1")
    reg = _registry()
    runs_dir = locations.runs_dir(args.runs_dir)
    manifests = locations.manifest_dirs(runs_dir, args.splits_dir)
    collection = open_collection(reg, args.collection, data_dir=args.data_dir, name=args.name_collection)
    found = _results_by_run(runs_dir, collection.name, args.runs, args.splits_dir, loaded=collection)
    genre_of = {d: doc.genre for d, doc in collection.documents.items()}
    rows = []
    for name, results in found.items():
        shares, s8 = [], []
        for path, res in results:
            split = read_manifest(find_manifest(manifests, collection.name, res["seed"]))
            shares.append(
                same_genre_share(
                    read_rankings(path),
                    split.query_genres,
                    split.candidates,
                    genre_of,
                    args.k,
                    where=f"{name} seed {res['seed']}",
                )
            )
            s8.append(res["metrics"]["success@8"])
        top = [100 * s.top_k for s in shares]
        rows.append(
            [
                name,
                len(shares),
                f"{mean(top):.1f} ± {pstdev(top):.1f}",
                f"{100 * mean(s.chance for s in shares):.1f}",
                f"{100 * mean(s8):.1f}",
            ]
        )
    print(
        tabulate(
            rows,
            headers=["run", "seeds", f"same-genre share of top {args.k}, %", "chance (all candidates), %", "Success@8"],
            tablefmt="github",
            disable_numparse=True,
        )
    )
    print(
        f"\nEvery needle is outside its query's genre, so the same-genre documents in the top {args.k} are "
        "distractors by other authors; a share far above chance means the ranking follows the query's topic."
    )
    return 0


def cmd_topics(args) -> int:
    from harness.data.collection import read_documents
    from harness.data.topic_labels import (
        TopicSettings,
        derive_topics,
        k_study,
        write_topic_outputs,
    )

    if not 0 <= args.seed < 2**32:  # numpy's seeds
        raise HarnessError(f"--seed {args.seed}: give a whole number from 0 to {2**32 - 1}")
    out, labelled_out = (
        locations.checked_output(args.out, "--out"),
        locations.checked_output(args.labelled_out, "--labelled-out"),
    )
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
    write_topic_outputs(labels, docs, out, labelled_out)
    if args.out:
        print(f"wrote {args.out} (labels sha256 {labels.sha256[:16]}…)", file=sys.stderr)
    if args.labelled_out:
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
    job = RunJob(
        systems=args.systems,
        collection=args.collection,
        seeds=args.seeds,
        overrides=overrides,
        run_name=args.name,
        depth=args.depth,
        overwrite=args.overwrite,
        runs_dir=args.runs_dir,
        splits_dir=args.splits_dir,
        data_dir=args.data_dir,
        background=args.background,
        author_fraction=args.author_fraction,
        progress=not args.no_progress,
        pool=args.pool,
        dissimilarity=_dissimilarity_arg(args),
        max_per_author_genre=args.max_per_author_genre,
        collection_name=args.name_collection,
    )
    run_job(_registry(), job)
    return 0


def cmd_rerank(args) -> int:
    from harness.config import parse_set_args
    from harness.runs.rerank_job import RerankJob, rerank_job

    overrides = parse_set_args(args.set)
    if args.model:
        overrides["model"] = args.model
    job = RerankJob(
        system=args.system,
        first_stage=args.first_stage,
        collection=args.collection,
        seeds=args.seeds,
        overrides=overrides,
        run_name=args.name,
        depth=args.depth,
        overwrite=args.overwrite,
        runs_dir=args.runs_dir,
        splits_dir=args.splits_dir,
        data_dir=args.data_dir,
        author_fraction=args.author_fraction,
        max_per_author_genre=args.max_per_author_genre,
        collection_name=args.name_collection,
    )
    rerank_job(_registry(), job)
    return 0


def cmd_submit(args) -> int:
    from harness.runs.submission import Submission, submit

    sub = Submission(
        file=args.file,
        collection=args.collection,
        seed=args.seed,
        name=args.name,
        format=args.format,
        description=args.description,
        submitter=args.submitter,
        depth=args.depth,
        overwrite=args.overwrite,
        runs_dir=args.runs_dir,
        splits_dir=args.splits_dir,
        data_dir=args.data_dir,
    )
    submit(_registry(), sub)
    return 0


def cmd_train(args) -> int:
    from harness.config import parse_set_args
    from harness.foundation import progress
    from harness.runs.train_job import train_job

    with progress.enabled(not args.no_progress):
        out = train_job(
            _registry(),
            args.system,
            args.train,
            locations.checked_place(args.out, "--out", record_ok=True),
            parse_set_args(args.set),
        )
    print(f"trained model: {out}")
    return 0


def cmd_curate(args) -> int:
    from harness.data.curation import CurationSettings, curate
    from harness.runs.systems import reference_embedder, text_embedder

    registry = _registry()
    settings = CurationSettings(
        embedder=reference_embedder(registry, required=not args.pairs),
        min_words=args.min_words,
        min_docs=args.min_docs,
        max_docs=args.max_docs,
        max_cosine=args.max_cosine,
        sbert_model=args.sbert_model,
        ner=args.ner,
        device=args.device,
    )
    from harness.foundation import progress

    locations.checked_output(args.out, "--out")

    with progress.enabled(not args.no_progress):
        if args.pairs:
            report = curate(args.input, args.out, settings, pairs_file=args.pairs)
        else:
            embed = text_embedder(
                registry,
                settings.embedder,
                {"model": settings.sbert_model, "device": settings.device, "batch_size": settings.batch_size},
            )
            report = curate(args.input, args.out, settings, embed=embed)
    for step in report["steps"]:
        print(
            f"{step['step']:>12}: removed {step['removed_documents']:>6} documents, {step['removed_authors']:>5} authors; "
            f"{step['documents']:>6} documents by {step['authors']:>5} authors remain"
        )
    return 0


def _record_alone(args, replaced: dict[str, object]):
    """The record --record names, read and checked (None without one); given beside a flag it replaces,
    one error line: the record is the one place that says what the pages are made from."""
    if args.record is None:
        return None
    given = [flag for flag, value in replaced.items() if value is not None]
    if given:
        raise HarnessError(
            f"--record with {', '.join(given)}: the record file names the inputs and where the pages go; "
            "give --record alone, or the flags without it"
        )
    from harness.reports.record import read_record

    return read_record(args.record)


def cmd_leaderboard(args) -> int:
    from harness.reports.leaderboard import (
        leaderboard_files,
        load_board,
        plugin_page_names,
        record_board,
        summary,
        write_pages,
    )

    options = {"allow_empty": args.allow_empty, "plots": not args.no_plots, "reported": args.reported}
    record = _record_alone(
        args,
        {
            "--runs-dir": args.runs_dir,
            "--out": args.out,
            "--splits-dir": args.splits_dir,
            "--bench-results": args.bench_results,
        },
    )
    # --html alone writes the site alone; the Markdown pages go where the record or --out says, or to the home
    pages = args.html is None or args.out is not None or record is not None
    out = locations.leaderboard_dir(record.pages if record is not None else args.out)
    if pages and args.html is not None and Path(args.html).resolve() == out.resolve():
        raise HarnessError(
            f"the pages and --html both name {out}: the pages and the site each need a folder of their own"
        )
    if record is not None:
        board = record_board(record, **options)
    else:
        board = load_board(
            locations.runs_dir(args.runs_dir), splits_dir=args.splits_dir, bench_dir=args.bench_results, **options
        )
    files = leaderboard_files(board)
    site = None
    if args.html is not None:
        from harness.reports.html_site import build_site, check_site_folder

        check_site_folder(args.html)
        site = build_site(board, {k: v for k, v in files.items() if isinstance(v, bytes)})  # built before writing
    if pages:  # the pages and the site as one set: a kill leaves both old or both new
        written = write_pages(
            files,
            out,
            site=None if site is None else (Path(args.html), site),
            plugin_pages=plugin_page_names(board),
        )
        print(f"wrote {len(written)} files to {out}: {', '.join(p.name for p in written)}")
    elif site is not None:
        from harness.reports.html_site import write_site

        write_site(args.html, site)
    if site is not None:
        print(f"wrote the HTML leaderboard: {Path(args.html) / 'index.html'} ({len(site)} pages)")
    print(summary(board))
    if pages:
        print(f"the tables: {out / 'main.md'}")
    else:
        print("no Markdown pages written (--out DIR writes them beside the site)")
    return 0


def cmd_export(args) -> int:
    from harness.reports.export import export_tables

    record = _record_alone(args, {"--runs-dir": args.runs_dir})
    out = locations.export_dir(args.out)
    if record is not None:  # the runs, their manifests and the stale-runs registry the record names
        written = export_tables(
            record.runs, out, args.format, splits_dir=record.splits, stale_registry=record.registries.stale
        )
    else:
        written = export_tables(locations.runs_dir(args.runs_dir), out, args.format)
    for p in written:
        print(f"wrote {p}")
    return 0


def cmd_reproduce(args) -> int:
    from harness.experiments.reproduce import Options, reproduce

    opts = Options(
        only=args.only or (),
        dry_run=args.dry_run,
        gpus=args.gpus,
        executor=args.executor,
        runs_dir=args.runs_dir,
        data_dir=args.data_dir,
        progress=not args.no_progress,
        slurm_partition=args.slurm_partition,
        slurm_timeout_min=args.slurm_timeout,
        collections=args.collections or (),
    )
    return reproduce(_registry(), args.file, opts)


def cmd_stage(args) -> int:
    from harness.experiments.plan import Plan
    from harness.experiments.reproduce import load
    from harness.experiments.staging import pack, unpack
    from harness.foundation import locations

    if args.action == "pack":
        if not args.experiment:
            raise HarnessError("stage pack needs --experiment FILE (whose backbones and data to pack)")
        runs = Path(locations.runs_dir(args.runs_dir)).resolve()
        plan = Plan(load(args.experiment, _registry()), _registry(), runs, data_dir=args.data_dir)
        written = pack(plan, args.folder, args.chunk_mib, args.only)
        print(f"wrote {len(written) - 1} chunks of at most {args.chunk_mib} MiB and the manifest to {args.folder}")
        return 0
    dest = locations.checked_output(args.dest, "--dest") or locations.home() / "staged"
    missing = unpack(args.folder, dest)
    if missing:
        print(f"{len(missing)} chunks still to come: {', '.join(missing)}")
        return 3
    print(
        f"unpacked into {dest}: point ${locations.MODEL_DIR_ENV} at {dest / 'models'} and "
        f"${locations.CORPORA_ENV} at {dest / 'corpora'}"
        + (f", and ${locations.STORE_ENV} at {dest / 'store'}" if (dest / "store").is_dir() else "")
        + (f"; copy {dest / 'runs'} into the runs folder there" if (dest / "runs").is_dir() else "")
    )
    return 0


def cmd_models(args) -> int:
    from tabulate import tabulate

    from harness.experiments.store import stored_models
    from harness.foundation import locations

    rows = []
    for mid, folder, card in stored_models():
        data = card.get("training_data") or {}
        rows.append(
            [
                mid,
                card.get("system"),
                (card.get("recipe") or {}).get("backbone"),
                f"{str(data.get('sha256', ''))[:12]} ({data.get('documents')} docs)",
                card.get("steps"),
                card.get("final_loss"),
                card.get("device"),
                card.get("trained_at"),
            ]
        )
        if args.paths:
            rows[-1].append(str(folder))
    if not rows:
        print(f"no trained models in {locations.store_dir() / 'models'} (`aa-harness reproduce` puts them there)")
        return 0
    headers = ["model id", "system", "backbone", "training data", "steps", "final loss", "device", "trained at"]
    print(tabulate(rows, headers=headers + (["folder"] if args.paths else []), tablefmt="github"))
    return 0


def cmd_data_build(args) -> int:
    from harness.data.builders import build_files

    out = locations.checked_output(args.out, "--out") or locations.corpora_dir(None)
    for b in build_files(args.names, args.source, out):
        state = "already there, same bytes" if b.unchanged else "wrote"
        print(f"{state}: {b.path} ({b.docs:,} docs, {b.authors:,} authors, sha256 {b.sha256})")
    return 0


def cmd_where(args) -> int:
    from tabulate import tabulate

    rows = [[loc.what, loc.flag or "–", loc.env or "–", loc.path] for loc in locations.all_locations()]
    print(
        tabulate(
            rows, headers=["location", "flag", "environment", "resolved now"], tablefmt="github", disable_numparse=True
        )
    )
    print(
        "\nOrder: the flag, then the environment variable, then the default shown. "
        f"Defaults hang off the home (${locations.HOME_ENV}, else the per-user data folder)."
    )
    return 0


# Shared options: one wording and one default rule per option, whichever verb takes it.


def _add_runs_dir(sp, what: str = "results folder") -> None:
    sp.add_argument(
        "--runs-dir",
        type=Path,
        default=None,
        help=f"{what}: <runs-dir>/<collection>/<run>/seed-<S>.json (default: ${locations.RUNS_ENV}, "
        "else <home>/runs; `aa-harness where` shows it)",
    )


def _add_splits_dir(sp) -> None:
    sp.add_argument(
        "--splits-dir",
        type=Path,
        default=None,
        help="split manifests folder, read and written alone (default: the harness's read-only record "
        "for its own collections, then <runs-dir>-splits/ beside the runs folder, where manifests "
        "that runs build go)",
    )


def _add_data_dir(sp) -> None:
    sp.add_argument(
        "--data-dir",
        help=f"data folder for the collection (default: its environment variable, "
        f"${locations.CORPORA_ENV} for the public corpora, else <home>/corpora)",
    )


def _add_record(sp, takes: str, replaces: str) -> None:
    sp.add_argument(
        "--record",
        type=Path,
        default=None,
        metavar="FILE",
        help=f"the leaderboard's record: a TOML file (or a folder holding record.toml) naming {takes}, "
        f"each taken from there alone; not with {replaces} (default: no record, and no registry is read)",
    )


def _add_set(sp, what: str = "override a config value, read by the key's type (repeatable)") -> None:
    sp.add_argument("--set", action="append", metavar="KEY=VALUE", help=what)


def _add_overwrite(sp) -> None:
    sp.add_argument("--overwrite", action="store_true", help="recompute results that are up to date")


def _add_data_options(sp) -> None:
    """The collection, its seeds and split settings, and where data, manifests and results are."""
    sp.add_argument(
        "--collection", default="demo", help="registered name, or a canonical JSONL(.gz) path (default: demo)"
    )
    sp.add_argument(
        "--name-collection",
        metavar="NAME",
        help="name a collection given as a path (default: the file's stem); it names its manifests and "
        "results folder, so two different files called tiny.jsonl need two names",
    )
    sp.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS), help="split seeds (default: 0 1001 2001 3001)")
    _add_data_dir(sp)
    sp.add_argument("--background", nargs="*", default=[], help="extra background JSONL files (with a path collection)")
    sp.add_argument(
        "--author-fraction",
        type=float,
        default=None,
        help="share of foreground authors sampled per seed (default: the collection's, "
        f"else {DEFAULT_AUTHOR_FRACTION})",
    )
    sp.add_argument(
        "--pool",
        choices=POOLS,
        default=None,
        help="candidate pool: paper (Appendix B: sampled authors' other-genre documents + background) "
        "or all (also the foreground authors not sampled); default: the collection's, else all",
    )
    sp.add_argument(
        "--max-needle-cosine",
        type=float,
        default=None,
        metavar="T",
        help="dissimilarity rule: drop queries with a needle at word TF-IDF cosine >= T "
        "(1: no rule; default: the collection's)",
    )
    sp.add_argument(
        "--max-per-author-genre",
        type=int,
        default=None,
        metavar="N",
        help="keep at most N documents of any one author in any one genre, chosen by the seed, so no "
        "author outweighs the rest (0: no cap; default: the collection's)",
    )
    _add_splits_dir(sp)
    _add_runs_dir(sp)


# One function per verb, in the order `aa-harness --help` lists them.


def _add_systems_parser(sub) -> None:
    sp = sub.add_parser("systems", help="list registered systems, or one system's --set keys")
    sp.add_argument(
        "name",
        nargs="?",
        metavar="NAME",
        help="a system: show its capabilities and config keys with type, default and help",
    )
    sp.set_defaults(fn=cmd_systems)


def _add_collections_parser(sub) -> None:
    sp = sub.add_parser("collections", help="list registered collections and whether their data was found, and where")
    sp.add_argument("name", nargs="?", metavar="NAME", help="a collection: show its description and where its data is")
    sp.add_argument("--data-dir", help="look for the data here instead of the environment variables' folders")
    sp.set_defaults(fn=cmd_collections)


def _add_where_parser(sub) -> None:
    sp = sub.add_parser("where", help="print every folder the harness reads or writes, as resolved now")
    sp.set_defaults(fn=cmd_where)


def _data_build_epilog() -> str:
    from harness.data.builders import sources

    lines = [
        "files, by the public distribution --source must hold (NAME: a file, or a distribution for all of its files):"
    ]
    for src in sources().values():
        lines.append(f"  {src.name}: {', '.join(src.outputs)}")
        lines.append(f"      {src.title}; layout: {src.layout}")
        lines.append(f"      built from: {src.revision}")
    lines.append(
        "Each file is checked against the published file's sha256 before anything is written; "
        "a mismatch writes nothing."
    )
    return "\n".join(lines)


def _add_data_parser(sub) -> None:
    sp = sub.add_parser("data", help="build the public corpus files from their public distributions, byte for byte")
    verbs = sp.add_subparsers(dest="data_command", required=True, metavar="ACTION")
    b = verbs.add_parser(
        "build",
        help="build corpus files from a public distribution, checked by sha256",
        description="Build public corpus files (reddit-xsub.jsonl.gz, blogs-xtopic.jsonl.gz, ...) "
        "from the public distribution they were made from, byte for byte.",
        epilog=_data_build_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    b.add_argument(
        "names",
        nargs="+",
        metavar="NAME",
        help="a corpus file's name without .jsonl.gz (e.g. reddit-xsub), or a distribution's name "
        "for all of its files; names given together must come from one distribution",
    )
    b.add_argument(
        "--source",
        required=True,
        metavar="PATH",
        help="the distribution's folder as published (or a checkout of the repository holding it)",
    )
    b.add_argument(
        "--out",
        metavar="DIR",
        help=f"folder to write into (default: ${locations.CORPORA_ENV}, else <home>/corpora: "
        "where the collections look)",
    )
    b.set_defaults(fn=cmd_data_build)


def _add_split_parser(sub) -> None:
    sp = sub.add_parser("split", help="build (or check) split manifests and print the counts table")
    _add_data_options(sp)
    sp.add_argument(
        "--overwrite",
        action="store_true",
        help="rebuild manifests even if they exist (results made on the old ones no longer match)",
    )
    sp.add_argument(
        "--closeness",
        action="store_true",
        help="also print how close the haystack is to the queries (LSA nearest neighbours)",
    )
    sp.set_defaults(fn=cmd_split)


def _add_compare_parser(sub) -> None:
    sp = sub.add_parser("compare", help="paired significance test of two runs on one collection (pooled seeds)")
    sp.add_argument("run_a", metavar="RUN_A", help="a run name under <runs-dir>/<collection>/")
    sp.add_argument(
        "run_b",
        metavar="RUN_B",
        nargs="?",
        help="the run to compare it with (same collection and seeds); with --against, default RUN_A",
    )
    sp.add_argument("--collection", required=True, help="the collection both runs were made on")
    sp.add_argument(
        "--against",
        type=Path,
        metavar="DIR",
        help="read RUN_B from this results folder (a rerun in --runs-dir against the committed record, say)",
    )
    _add_runs_dir(sp)
    _add_splits_dir(sp)
    sp.add_argument(
        "--resamples",
        type=int,
        default=10000,
        help="random sign assignments to start with when the clusters are too many to enumerate "
        "(default 10000; more are drawn while p is near 0.05 and its Monte Carlo SE above 0.001)",
    )
    sp.set_defaults(fn=cmd_compare)


def _add_topic_share_parser(sub) -> None:
    sp = sub.add_parser("topic-share", help="how much of each run's top k is in the query's own genre (topic)")
    sp.add_argument("runs", nargs="+", metavar="RUN", help="run names under <runs-dir>/<collection>/")
    sp.add_argument("--collection", required=True, help="the collection the runs were made on")
    sp.add_argument("--k", type=int, default=8, help="top k to look at (default 8)")
    _add_runs_dir(sp)
    _add_splits_dir(sp)
    _add_data_dir(sp)
    sp.add_argument(
        "--name-collection",
        metavar="NAME",
        help="the name a collection given as a path was run under (default: the file's stem)",
    )
    sp.set_defaults(fn=cmd_topic_share)


def _add_topics_parser(sub) -> None:
    sp = sub.add_parser("topics", help="derive per-document topic labels for a single-genre corpus (or compare k)")
    sp.add_argument("--input", nargs="+", required=True, help="canonical JSONL(.gz) files")
    sp.add_argument("--k", type=int, nargs="+", default=[20], help="topics; several values: print the k study")
    sp.add_argument("--svd-dims", type=int, default=100, help="LSA dimensions before k-means (default 100)")
    sp.add_argument("--seed", type=int, default=0, help="k-means random state (default 0)")
    sp.add_argument("--out", type=Path, help="labels JSON (ids, labels, settings, fingerprint)")
    sp.add_argument(
        "--labelled-out",
        type=Path,
        help="the input rewritten with genre = topic label (keep it outside the repository)",
    )
    sp.set_defaults(fn=cmd_topics)


def _add_run_parser(sub) -> None:
    sp = sub.add_parser("run", help="run systems on a collection's splits and write results")
    sp.add_argument("systems", nargs="+", metavar="SYSTEM", help="registered system names (`aa-harness systems`)")
    _add_data_options(sp)
    _add_set(
        sp,
        "override a system config value, read by the key's type (repeatable; `aa-harness systems NAME` lists the keys)",
    )
    sp.add_argument("--name", help="run name (default: the system name); results go to <runs-dir>/<collection>/<name>/")
    sp.add_argument(
        "--model",
        help="a trained model folder (the same as --set model=DIR); the backbone is its "
        "card's unless --set backbone=… is given",
    )
    sp.add_argument("--depth", type=int, default=100, help="ranking depth kept per query (default 100)")
    _add_overwrite(sp)
    sp.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bars (the per-seed lines and slow-encoding warnings still print)",
    )
    sp.set_defaults(fn=cmd_run)


def _add_rerank_parser(sub) -> None:
    sp = sub.add_parser("rerank", help="rescore a first-stage run's top k with a reranker, per seed")
    sp.add_argument("system", metavar="SYSTEM", help="a reranker system (`aa-harness systems` shows `rerank`)")
    _add_data_options(sp)
    sp.add_argument("--first-stage", required=True, help="run name of the first stage (its rankings are read)")
    sp.add_argument("--depth", type=int, default=100, help="how many first-stage candidates to rescore (default 100)")
    sp.add_argument(
        "--model",
        help="the trained reranker folder (the same as --set model=DIR); the backbone is "
        "its card's unless --set backbone=… is given",
    )
    _add_set(sp, "override a config value (repeatable)")
    sp.add_argument("--name", help="run name (default: <first stage>+<system>-<strategy>)")
    _add_overwrite(sp)
    sp.set_defaults(fn=cmd_rerank)


def _add_submit_parser(sub) -> None:
    sp = sub.add_parser(
        "submit",
        help="score rankings made elsewhere (a TREC run or a rankings file) on one split and record them as a run",
    )
    sp.add_argument(
        "file",
        type=Path,
        metavar="FILE",
        help="the rankings: a TREC run (`qid Q0 docid rank score tag`, one tag) or, with --format "
        "rankings, the harness's rankings JSONL(.gz)",
    )
    sp.add_argument("--collection", required=True, help="the collection whose split was ranked")
    sp.add_argument("--seed", type=int, required=True, help="the split seed that was ranked")
    sp.add_argument("--name", required=True, help="run name; the result goes to <runs-dir>/<collection>/<name>/")
    sp.add_argument("--format", choices=["trec", "rankings"], default="trec", help="the file's format (default trec)")
    sp.add_argument("--description", default="", help="what made these rankings, recorded with the result")
    sp.add_argument("--submitter", default="", help="who submitted them, recorded with the result")
    sp.add_argument(
        "--depth",
        type=int,
        default=100,
        help="ranks kept per query (default 100); deeper ones are cut after the tie rule",
    )
    sp.add_argument("--overwrite", action="store_true", help="replace this seed's result if the run has one")
    _add_runs_dir(sp)
    _add_splits_dir(sp)
    _add_data_dir(sp)
    sp.set_defaults(fn=cmd_submit)


def _add_train_parser(sub) -> None:
    sp = sub.add_parser("train", help="train a system on canonical JSONL training data")
    sp.add_argument("system", metavar="SYSTEM", help="a trainable system (`aa-harness systems NAME` says)")
    sp.add_argument(
        "--train", nargs="+", required=True, help="canonical JSONL(.gz) training files (e.g. curated blogs)"
    )
    sp.add_argument("--out", type=Path, required=True, help="output folder: model/, train_log.json, checkpoint/")
    _add_set(sp, "override a config value (repeatable)")
    sp.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bars (hard-negative mining, training); the log lines still print",
    )
    sp.set_defaults(fn=cmd_train)


def _add_curate_parser(sub) -> None:
    sp = sub.add_parser(
        "curate", help="the paper's training-data curation (length, author counts, dissimilar pair, PII)"
    )
    sp.add_argument("--input", nargs="+", required=True, help="canonical JSONL(.gz) files")
    sp.add_argument(
        "--out",
        type=Path,
        required=True,
        help="curated JSONL.gz; a .report.json and a .pairs.jsonl.gz are written beside it",
    )
    sp.add_argument(
        "--pairs",
        type=Path,
        help="a .pairs.jsonl.gz from an earlier curate of the same inputs (e.g. on a GPU "
        "machine): use its most dissimilar pairs instead of embedding",
    )
    sp.add_argument(
        "--min-words", type=int, default=350, help="drop documents shorter than this many words (default 350)"
    )
    sp.add_argument("--min-docs", type=int, default=2, help="drop authors with fewer documents (default 2)")
    sp.add_argument("--max-docs", type=int, default=50, help="drop authors with more documents (default 50)")
    sp.add_argument("--max-cosine", type=float, default=0.2, help="keep an author's most dissimilar pair if below this")
    sp.add_argument(
        "--sbert-model",
        default="sentence-transformers/all-mpnet-base-v2",
        help="the embedder of the dissimilar-pair step (hub id or local folder)",
    )
    sp.add_argument(
        "--ner", default="spacy", choices=["spacy", "none"], help="person-name detection (none: patterns only)"
    )
    sp.add_argument("--device", default="auto", help="cuda, cpu or auto (CUDA when present)")
    sp.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bars (embedding, name recognition); the step lines still print",
    )
    sp.set_defaults(fn=cmd_curate)


def _add_reproduce_parser(sub) -> None:
    from harness.experiments.executors import EXECUTORS

    sp = sub.add_parser(
        "reproduce",
        help="run an experiment file's steps that are not done yet (curate, train, run, rerank, leaderboard)",
    )
    sp.add_argument("file", metavar="FILE", help="an experiment file (TOML), e.g. experiments/smoke.toml")
    sp.add_argument(
        "--dry-run",
        action="store_true",
        help="print each step, whether it is done, and its projected GPU-minutes; run nothing",
    )
    sp.add_argument(
        "--only",
        nargs="+",
        metavar="STEP",
        help="run just these steps (an address such as train.sadiri, or a kind such as run); "
        "the steps they need must be done",
    )
    sp.add_argument(
        "--collections",
        nargs="+",
        metavar="NAME",
        help="run and rerank steps on just these collections (default: every collection a step names)",
    )
    sp.add_argument(
        "--gpus",
        type=int,
        default=0,
        metavar="N",
        help="run independent steps side by side on N GPUs of this machine, one process a step "
        "(default 0: one after another in this process)",
    )
    sp.add_argument(
        "--executor",
        choices=EXECUTORS,
        default="local",
        help="local (this machine) or slurm (each step a job, through submitit)",
    )
    sp.add_argument("--slurm-partition", default=None, help="the Slurm partition (default: the cluster's)")
    sp.add_argument("--slurm-timeout", type=int, default=240, metavar="MINUTES", help="each Slurm job's time limit")
    _add_runs_dir(sp)
    _add_data_dir(sp)
    sp.add_argument("--no-progress", action="store_true", help="no progress lines")
    sp.set_defaults(fn=cmd_reproduce)


def _add_stage_parser(sub) -> None:
    sp = sub.add_parser(
        "stage",
        help="carry an experiment's backbones and data to a machine without the model hub, "
        "in chunks of a size a link allows",
    )
    sp.add_argument("action", choices=["pack", "unpack"], help="pack here (from the local copies), unpack there")
    sp.add_argument("folder", type=Path, metavar="FOLDER", help="where the chunks and stage.json are written or found")
    sp.add_argument("--experiment", metavar="FILE", help="pack: the experiment file whose backbones and data to pack")
    sp.add_argument(
        "--only",
        nargs="+",
        metavar="NAME",
        help="pack: just these backbones, data names, collections, done steps (whose store entry to carry) "
        "or steps to run (the backbones, data, collections, store entries and results they read; with no "
        "step named, every step left's store entries and results)",
    )
    sp.add_argument("--chunk-mib", type=int, default=60, help="pack: the largest chunk, in MiB (default 60)")
    sp.add_argument(
        "--dest", metavar="DIR", help="unpack: the folder to fill with models/ and corpora/ (default <home>/staged)"
    )
    _add_data_dir(sp)
    _add_runs_dir(sp, "pack: the results folder that says which steps are still to run")
    sp.set_defaults(fn=cmd_stage)


def _add_models_parser(sub) -> None:
    sp = sub.add_parser("models", help="list the trained models in the store, with their cards")
    sp.add_argument("--paths", action="store_true", help="also print each model's folder")
    sp.set_defaults(fn=cmd_models)


def _add_leaderboard_parser(sub) -> None:
    sp = sub.add_parser("leaderboard", help="regenerate the leaderboard pages and plots from the run files")
    _add_runs_dir(sp, "results to read")
    sp.add_argument(
        "--out",
        type=Path,
        default=None,
        help="folder for the Markdown pages and plots (default: <home>/leaderboards, unless --html is "
        "given: then none are written without --out); only pages these runs produce are written",
    )
    sp.add_argument("--no-plots", action="store_true", help="tables only, no PNG plots (faster)")
    _add_splits_dir(sp)
    sp.add_argument("--reported", action="store_true", help="also write reported.md: the figures the paper reports")
    sp.add_argument(
        "--bench-results",
        type=Path,
        default=None,
        metavar="DIR",
        help="also write performance.md from the benchmark result files in DIR (a page the aa-harness-bench "
        "distribution adds: written when it is installed)",
    )
    _add_record(
        sp,
        "the runs, their manifests, the registries (stale runs, fixes, training logs), the benchmark "
        "results and the pages folder",
        "--runs-dir, --out, --splits-dir or --bench-results",
    )
    sp.add_argument(
        "--allow-empty", action="store_true", help="write the pages even when the runs folder has no results"
    )
    sp.add_argument(
        "--html",
        type=Path,
        default=None,
        metavar="DIR",
        help="write a static HTML leaderboard (DIR/index.html, a page per run; no server or network "
        "needed), alone or, with --out, beside the Markdown pages; an earlier site's pages in DIR are "
        "replaced, other files there are kept",
    )
    sp.set_defaults(fn=cmd_leaderboard)


def _add_export_parser(sub) -> None:
    sp = sub.add_parser(
        "export",
        help="write the leaderboard tables and per-query ranks as CSV or JSON, or the runs and qrels as TREC files",
    )
    _add_runs_dir(sp, "results to read")
    sp.add_argument(
        "--out",
        type=Path,
        default=None,
        help="folder for leaderboard.*, per-seed.* and per-query.*, or with --format trec for "
        "trec/<collection>/runs/<run>/seed-<S>.run and trec/<collection>/qrels/seed-<S>.qrels "
        "(default: <home>/export)",
    )
    sp.add_argument(
        "--format",
        choices=["csv", "json", "trec"],
        default="csv",
        help="file format (default csv); trec: a TREC run per run and seed, a qrels per collection and seed",
    )
    _add_record(sp, "the runs, their manifests and the stale-runs registry", "--runs-dir")
    sp.set_defaults(fn=cmd_export)


VERBS = (
    _add_systems_parser,
    _add_collections_parser,
    _add_data_parser,
    _add_where_parser,
    _add_split_parser,
    _add_compare_parser,
    _add_topic_share_parser,
    _add_topics_parser,
    _add_run_parser,
    _add_rerank_parser,
    _add_submit_parser,
    _add_train_parser,
    _add_curate_parser,
    _add_reproduce_parser,
    _add_models_parser,
    _add_stage_parser,
    _add_leaderboard_parser,
    _add_export_parser,
)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="aa-harness", description="Benchmark harness for cross-genre authorship attribution."
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {_version_line()}")
    p.add_argument(
        "--debug",
        action="store_true",
        help=f"print the full traceback (with its chained cause) of an error (or set {DEBUG_ENV}=1)",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in VERBS:
        add(sub)
    for verb in sub.choices.values():  # also accepted after a built-in verb
        verb.add_argument(
            "--debug",
            action="store_true",
            default=argparse.SUPPRESS,
            help=f"print the full traceback of an error, with its chained cause (or set {DEBUG_ENV}=1)",
        )
    from harness.plugins import add_plugin_commands

    add_plugin_commands(sub)  # after the built-in verbs, so a plugin cannot take one of their names
    return p


def _version_line() -> str:
    from harness.foundation.provenance import git_commit, harness_version

    commit = git_commit()
    return f"{harness_version()} (commit {commit[:12]}{'-dirty' if commit.endswith('-dirty') else ''})"


DEBUG_ENV = "AA_HARNESS_DEBUG"


class _StderrHandler(logging.StreamHandler):
    """Writes to the sys.stderr of the moment (tests swap it), each record as `aa-harness: ...`."""

    def __init__(self):
        super().__init__()
        self.setFormatter(logging.Formatter("aa-harness: %(message)s"))

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        if record.levelno >= logging.WARNING:
            text = text.replace("aa-harness: ", f"aa-harness: {record.levelname.lower()}: ", 1)
        return text


_HANDLER = _StderrHandler()


def _configure_logging(debug: bool) -> None:
    """The harness's and the plugins' records go to stderr; other libraries' warnings too."""
    root = logging.getLogger()
    if _HANDLER not in root.handlers:
        root.addHandler(_HANDLER)
    if root.level == logging.NOTSET or root.level > logging.WARNING:
        root.setLevel(logging.WARNING)
    for name in ("harness", "plugins"):
        logging.getLogger(name).setLevel(logging.DEBUG if debug else logging.INFO)


def _error_line(e: BaseException) -> str:
    if isinstance(e, OSError):
        where = e.filename if e.filename is not None else "?"
        return f"{where}: {e.strerror or e}"
    return str(e)


def entry(argv: list[str] | None = None) -> None:
    """The `aa-harness` command: main(), then exit with its status without waiting for threads a
    plugin left running (the interpreter would wait for them after the summary was printed)."""
    import threading

    status = main(argv)
    left = [t for t in threading.enumerate() if t is not threading.main_thread() and t.is_alive() and not t.daemon]
    if left:
        names = ", ".join(sorted(t.name for t in left))
        print(
            f"aa-harness: warning: {len(left)} thread(s) left running by plugin code ({names}); exiting without them",
            file=sys.stderr,
        )
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    sys.exit(status)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    _configure_logging("--debug" in argv)  # before the parser: plugins adding commands may warn
    from harness.plugins import check_import_names

    try:  # before the parser, which loads the plugins: a shadowed `plugins` package is one line, not a traceback
        check_import_names()
    except HarnessError as e:
        print(f"aa-harness: error: {e}", file=sys.stderr)
        return 2
    args = build_parser().parse_args(argv)
    debug = args.debug or os.environ.get(DEBUG_ENV, "") not in ("", "0")
    _configure_logging(debug)
    try:
        return args.fn(args)
    except BrokenPipeError:  # `aa-harness systems | head`: the reader left; not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (HarnessError, OSError) as e:
        if debug:
            traceback.print_exception(type(e), e, e.__traceback__, file=sys.stderr)
        print(f"aa-harness: error: {_error_line(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("aa-harness: interrupted; finished seeds are kept, a rerun continues from there", file=sys.stderr)
        return 130
