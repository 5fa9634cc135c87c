"""`aa-harness bench encode|rerank|search`: build, check and time in one process; write JSON."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.errors import HarnessError


def _out_help(name: str) -> str:
    return (
        f"result JSON (default: {name} in $AA_HARNESS_BENCH_DIR, else in the checkout's benchmarks/results, "
        "else in <home>/bench)"
    )


def add_parser(sub) -> None:
    from aa_harness_bench.archs import arch_names

    sp = sub.add_parser("bench", help="throughput of the harness's paths against naive baselines (GPU)")
    kinds = sp.add_subparsers(dest="bench", required=True, metavar="KIND")

    def model_args(p, default_arch):
        p.add_argument(
            "--arch",
            default=default_arch,
            choices=arch_names(),
            required=default_arch is None,
            help=f"architecture (default {default_arch})",
        )
        p.add_argument(
            "--random-weights",
            action="store_true",
            help="build the architecture from its config with random weights (nothing downloaded)",
        )
        p.add_argument(
            "--backbone",
            metavar="REF",
            help="real weights instead: a backbone as the systems load it (hub id or local folder, a GGUF folder "
            "too; dequantized to bf16 on GPU); it names the result and is the default --tokenizer",
        )
        p.add_argument("--device", default="auto", help="cuda, cuda:N or cpu (default auto: CUDA when present)")
        p.add_argument("--max-tokens", type=int, default=65536, help="token budget of a harness batch")
        p.add_argument("--naive-batch", type=int, default=32, help="batch size of the naive baseline (default 32)")
        p.add_argument("--seed", type=int, default=0, help="seed of the random weights and inputs (default 0)")
        p.add_argument(
            "--texts",
            nargs="+",
            type=Path,
            help="canonical JSONL(.gz) files whose texts are the inputs (else random token ids)",
        )
        p.add_argument(
            "--tokenizer",
            help="tokenizer for --texts: hub id or folder (default: --backbone's, else the fetched Qwen3 "
            "tokenizer in .cache/models/qwen3-tokenizer)",
        )
        p.add_argument("--out", type=Path, help=_out_help("<kind>-<arch>-<device>.json"))
        p.add_argument("--no-save", action="store_true", help="print only")

    p = kinds.add_parser("encode", help="bi-encoder encoding: tokens/s, documents/s, TFLOP/s, ratio to naive")
    model_args(p, "qwen3-0.6b")
    p.add_argument("--docs", type=int, default=4096, help="documents to encode (default 4096)")
    p.add_argument(
        "--lengths",
        type=int,
        nargs=2,
        default=[150, 512],
        metavar=("MIN", "MAX"),
        help="document lengths in tokens, drawn uniformly (default 150 512)",
    )
    p.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="MAX_TOKENS[:PATH]",
        help="also time the harness with this budget and path (padded, packed or aa_causal); repeatable",
    )
    p.add_argument(
        "--shard",
        action="store_true",
        help="under torchrun: rank 0 alone, then all ranks sharded (the multi-GPU scaling figure)",
    )
    fp8_arg(p)
    p.set_defaults(fn=cmd_encode)

    p = kinds.add_parser(
        "rerank", help="cross-encoder reranking: pairs/s with query prefix reuse vs concatenated pairs"
    )
    model_args(p, "mistral-nemo-12b")
    p.add_argument("--queries", type=int, default=3, help="queries (default 3)")
    p.add_argument("--candidates", type=int, default=100, help="candidates per query (default 100)")
    p.add_argument(
        "--query-lengths",
        type=int,
        nargs=2,
        default=[300, 512],
        metavar=("MIN", "MAX"),
        help="query lengths in tokens (default 300 512)",
    )
    p.add_argument(
        "--lengths",
        type=int,
        nargs=2,
        default=[150, 512],
        metavar=("MIN", "MAX"),
        help="candidate lengths in tokens (default 150 512)",
    )
    fp8_arg(p)
    p.set_defaults(fn=cmd_rerank)

    p = kinds.add_parser("train", help="LoRA training steps: the harness's fast steps against HF + PEFT (same batches)")
    p.add_argument(
        "model",
        choices=["retriever", "reranker"],
        help="retriever (16 authors x 2 documents, Eq. 2) or "
        "reranker (1 query x 13 candidates, shared prefix against concatenated pairs)",
    )
    model_args(p, None)
    p.add_argument("--authors", type=int, default=16, help="retriever: authors a step (2 documents each)")
    p.add_argument("--candidates", type=int, default=13, help="reranker: 1 positive + m negatives")
    p.add_argument(
        "--lengths",
        type=int,
        nargs=2,
        default=None,
        metavar=("MIN", "MAX"),
        help="document (retriever, default 150 512) or candidate (reranker, default 512 512) tokens",
    )
    p.add_argument(
        "--query-lengths",
        type=int,
        nargs=2,
        default=[512, 512],
        metavar=("MIN", "MAX"),
        help="reranker: query lengths in tokens (default 512 512)",
    )
    p.add_argument("--steps", type=int, default=3, help="timed steps a path")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps a path first (compilation)")
    p.add_argument(
        "--checkpoint",
        choices=["auto", "on", "off"],
        default="auto",
        help="recompute the harness's layers in backward (auto: on above 2B parameters)",
    )
    p.add_argument(
        "--no-compile",
        action="store_true",
        help="run the harness's layers uncompiled (default: as training runs them, "
        "compiled on CUDA above 2B parameters)",
    )
    p.add_argument(
        "--no-graphs",
        action="store_true",
        help="launch the harness's layers one by one (default: as training runs them, CUDA graphs "
        "of the padded pack where there is no checkpointing; with graphs, --warmup must cover the "
        "pack shapes, each captured when first met)",
    )
    p.add_argument(
        "--doc-tokens",
        type=int,
        default=512,
        help="tokens a paper training document for the epoch projection (the recipe truncates at 512)",
    )
    p.add_argument(
        "--fp8",
        action="store_true",
        help="then a third path: the harness's step over an FP8 frozen base (CUDA, compute capability 8.9 or "
        "newer), its first step compared with the bf16 harness's",
    )
    p.set_defaults(fn=cmd_train)

    p = kinds.add_parser("batching", help="hard-negative batching (Algorithm 1) against the pool size")
    p.add_argument(
        "--docs", type=int, nargs="+", default=[100_000, 400_000], help="pool sizes to batch (default 100000 400000)"
    )
    p.add_argument("--dim", type=int, default=2048, help="embedding width before the random projection to dim // 3")
    p.add_argument("--authors-per-batch", type=int, default=16, help="authors a batch (default 16)")
    p.add_argument("--device", default="auto", help="cuda, cpu or auto (default auto)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--out", type=Path, help=_out_help("<bench>-<device>.json"))
    p.add_argument("--no-save", action="store_true", help="print only, write no result file")
    p.set_defaults(fn=cmd_batching)

    p = kinds.add_parser("search", help="exact (torch) and compressed (faiss) search over synthetic vectors")
    p.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=[100_000, 1_000_000],
        help="candidate pool sizes (default 100000 1000000)",
    )
    p.add_argument("--dim", type=int, default=512, help="vector dimension (default 512)")
    p.add_argument("--queries", type=int, default=1000, help="queries (default 1000)")
    p.add_argument("--k", type=int, default=100, help="neighbours kept per query (default 100)")
    p.add_argument("--index", help="faiss index-factory string (default: IVF ~4 sqrt(n) lists, PQ dim/8)")
    p.add_argument(
        "--nprobe",
        type=int,
        nargs="+",
        default=[16, 64, 256],
        help="inverted lists visited per query; several values give a recall/speed curve",
    )
    p.add_argument("--exact-only", action="store_true", help="skip the faiss index (faiss not installed)")
    p.add_argument("--device", default="auto", help="cuda, cuda:N or cpu (default auto: CUDA when present)")
    p.add_argument("--seed", type=int, default=0, help="seed of the synthetic vectors (default 0)")
    p.add_argument("--out", type=Path, help=_out_help("search-<device>.json"))
    p.add_argument("--no-save", action="store_true", help="print only")
    p.set_defaults(fn=cmd_search)


def fp8_arg(p) -> None:
    p.add_argument(
        "--fp8",
        action="store_true",
        help="then the packed path again with the frozen base's products in FP8 (e4m3; CUDA, compute capability "
        "8.9 or newer), timed beside bf16 with its agreement with bf16; the model is quantized in place, last",
    )


def _log(*a):
    print(*a, flush=True)


DEFAULT_TOKENIZER = str(Path(".cache/models/qwen3-tokenizer"))


def _resolve(args) -> None:
    """The tokenizer --texts reads with (recorded as resolved), and the name a result takes."""
    if getattr(args, "tokenizer", None) is None and hasattr(args, "tokenizer"):
        args.tokenizer = getattr(args, "backbone", None) or DEFAULT_TOKENIZER
    if getattr(args, "backbone", None):
        if args.random_weights:
            raise HarnessError("--backbone loads real weights: leave out --random-weights")
        args.arch = Path(args.backbone.rstrip("/")).name if Path(args.backbone).is_dir() else args.backbone


def _model(args, device):
    import torch

    from aa_harness_bench.archs import build_model

    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    if getattr(args, "backbone", None):
        from harness.neural.hf import load_backbone

        model, _, _ = load_backbone(args.backbone, dtype=dtype)
        model = model.to(device).eval()
        model.requires_grad_(False)
        return model
    if not args.random_weights:
        raise HarnessError(
            "bench builds architectures with random weights only: pass --random-weights (or --backbone REF for real "
            "weights)"
        )
    model = build_model(args.arch, device, dtype, seed=args.seed)
    return model


def _check_fp8(args, device) -> None:
    if getattr(args, "fp8", False):
        from harness.neural.fast.fp8_linear import require_fp8

        require_fp8(device)


def _plain(value):
    """An argument as the result file records it: paths (alone or in a list, as --texts) as strings."""
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _save(args, kind, name, device, figures) -> None:
    from aa_harness_bench.results import write_result
    from aa_harness_bench.timing import device_facts

    if args.no_save:
        return
    keep = {k: _plain(v) for k, v in vars(args).items() if k not in ("fn", "command", "bench")}
    path = write_result(kind, name, device_facts(device), keep, figures, args.out)
    _log(f"wrote {path}")


def cmd_encode(args) -> int:
    from aa_harness_bench.workload import random_rows
    from harness.neural.device import pick_device

    _resolve(args)
    if args.shard:
        if args.fp8:
            raise HarnessError("--fp8 is timed on one GPU: leave out --shard")
        return _encode_sharded(args)
    device = pick_device(args.device)
    _check_fp8(args, device)
    model = _model(args, device)
    if args.texts:
        from aa_harness_bench.workload import text_rows

        rows = text_rows(args.texts, args.tokenizer, args.docs, vocab=model.config.vocab_size)
    else:
        rows = random_rows(args.docs, *args.lengths, model.config.vocab_size, args.seed)
    _log(
        f"encode {args.arch} on {device}: {args.docs} documents, {sum(map(len, rows)):,} tokens, lengths {args.lengths}"
    )
    from aa_harness_bench.encode import bench_encode

    variants = [(int(v.split(":")[0]), v.split(":")[1] if ":" in v else "packed") for v in args.variant]
    figures = bench_encode(
        model,
        rows,
        device,
        max_tokens=args.max_tokens,
        naive_batch=args.naive_batch,
        variants=variants,
        fp8=args.fp8,
        log=_log,
    )
    _log(f"agreement: {figures['agreement']}")
    _save(args, "encode", args.arch + ("-fp8" if args.fp8 else ""), device, figures)
    return 0


def _encode_sharded(args) -> int:
    import torch.distributed as dist

    from aa_harness_bench.encode import _figures, harness_encoder
    from aa_harness_bench.timing import timed
    from aa_harness_bench.workload import Shape, random_rows
    from harness.neural.device import pick_device
    from harness.neural.distributed import world
    from harness.neural.encoder import embed_features
    from harness.neural.sharded import embed_sharded

    rank, size, _ = world()
    if size < 2:
        raise HarnessError(
            "--shard needs several processes: torchrun --nproc_per_node N -m harness bench encode --shard"
        )
    device = pick_device("auto")
    model = _model(args, device)
    enc = harness_encoder(model)
    rows = random_rows(args.docs, *args.lengths, model.config.vocab_size, args.seed)
    shape = Shape.of(model)
    embed_features(enc, rows[:64], device, max_tokens=args.max_tokens)
    single = None
    if rank == 0:
        single, t_one = timed(lambda: embed_features(enc, rows, device, max_tokens=args.max_tokens), device)
    dist.barrier()
    embed_sharded(enc, rows[: 64 * size], device, embed=embed_features, max_tokens=args.max_tokens)
    dist.barrier()
    sharded, t_all = timed(
        lambda: embed_sharded(enc, rows, device, embed=embed_features, max_tokens=args.max_tokens), device
    )
    dist.barrier()
    if rank == 0:
        import numpy as np

        one, many = _figures(rows, t_one, shape), _figures(rows, t_all, shape)
        rel = np.linalg.norm(sharded - single, axis=1) / np.linalg.norm(single, axis=1)
        figures = {
            "gpus": size,
            "one_gpu": one,
            "sharded": many,
            "scaling": round(t_one / t_all, 3),
            "sharded_vs_one_rel_error_max": float(rel.max()),
        }
        _log(
            f"1 GPU: {one['tokens_per_s']:,.0f} tokens/s; {size} GPUs: {many['tokens_per_s']:,.0f} tokens/s "
            f"({t_one / t_all:.2f}x); max rel diff {rel.max():.2e}"
        )
        _save(args, "encode-sharded", f"{args.arch}-x{size}", device, figures)
    dist.barrier()
    dist.destroy_process_group()
    return 0


def cmd_rerank(args) -> int:
    from aa_harness_bench.rerank import bench_rerank
    from aa_harness_bench.workload import random_rows
    from harness.neural.device import pick_device

    _resolve(args)
    device = pick_device(args.device)
    _check_fp8(args, device)
    model = _model(args, device)
    vocab = model.config.vocab_size
    if args.texts:
        from aa_harness_bench.workload import text_rows

        queries = text_rows(args.texts, args.tokenizer, args.queries, vocab=vocab)
        pool = text_rows(args.texts, args.tokenizer, args.queries * args.candidates, skip=args.queries, vocab=vocab)
        cands = [pool[i * args.candidates : (i + 1) * args.candidates] for i in range(args.queries)]
    else:
        queries = random_rows(args.queries, *args.query_lengths, vocab, args.seed)
        cands = [random_rows(args.candidates, *args.lengths, vocab, args.seed + 1 + i) for i in range(args.queries)]
    _log(f"rerank {args.arch} on {device}: {args.queries} queries x {args.candidates} candidates")
    figures = bench_rerank(
        model,
        queries,
        cands,
        device,
        max_tokens=args.max_tokens,
        naive_batch=args.naive_batch,
        seed=args.seed,
        fp8=args.fp8,
        log=_log,
    )
    _log(f"agreement: {figures['agreement']}")
    _save(args, "rerank", args.arch + ("-fp8" if args.fp8 else ""), device, figures)
    return 0


def cmd_train(args) -> int:
    from aa_harness_bench.archs import build_config, parameter_count
    from aa_harness_bench.train import (
        bench_train_reranker,
        bench_train_retriever,
    )
    from aa_harness_bench.workload import random_rows
    from harness.neural.device import pick_device

    if args.backbone:
        raise HarnessError("bench train builds architectures with random weights only (--backbone: encode and rerank)")
    _resolve(args)
    if not args.random_weights:
        raise HarnessError("bench builds architectures with random weights only: pass --random-weights")
    device = pick_device(args.device)
    _check_fp8(args, device)

    def build():  # called once a path: the naive model is gone before the harness's is built
        return _model(args, device)

    vocab = build_config(args.arch).vocab_size
    big = parameter_count(args.arch) > 2e9
    checkpoint = big if args.checkpoint == "auto" else args.checkpoint == "on"
    compile = False if args.no_compile else None
    n_batches = args.steps + args.warmup + 1
    if args.model == "retriever":
        lengths = args.lengths or [150, 512]
        rows = random_rows(2 * args.authors * n_batches, *lengths, vocab, args.seed)
        _log(
            f"train retriever {args.arch} on {device}: {args.authors} authors x 2 documents of {lengths} tokens, "
            f"checkpointing {checkpoint}"
        )
        figures = bench_train_retriever(
            build,
            rows,
            device,
            authors=args.authors,
            steps=args.steps,
            warmup=args.warmup,
            checkpoint=checkpoint,
            compile=compile,
            doc_tokens=args.doc_tokens,
            fp8=args.fp8,
            graphs=not args.no_graphs,
            log=_log,
        )
    else:
        lengths = args.lengths or [512, 512]
        queries = random_rows(n_batches, *args.query_lengths, vocab, args.seed)
        groups = [(q, random_rows(args.candidates, *lengths, vocab, args.seed + 1 + i)) for i, q in enumerate(queries)]
        _log(
            f"train reranker {args.arch} on {device}: 1 query ({args.query_lengths} tokens) x {args.candidates} "
            f"candidates ({lengths} tokens) a step, checkpointing {checkpoint}"
        )
        figures = bench_train_reranker(
            build,
            groups,
            device,
            steps=args.steps,
            warmup=args.warmup,
            checkpoint=checkpoint,
            compile=compile,
            fp8=args.fp8,
            graphs=not args.no_graphs,
            log=_log,
        )
    _save(args, f"train-{args.model}", args.arch + ("-fp8" if args.fp8 else ""), device, figures)
    return 0


def cmd_batching(args) -> int:
    from aa_harness_bench.batching import bench_batching
    from harness.neural.device import pick_device

    device = pick_device(args.device)
    rows = bench_batching(
        args.docs, args.dim, device, authors_per_batch=args.authors_per_batch, seed=args.seed, log=_log
    )
    _save(args, "batching", f"d{args.dim}", device, rows)
    return 0


def cmd_search(args) -> int:
    from aa_harness_bench.search import bench_search
    from harness.neural.device import pick_device

    device = pick_device(args.device)
    rows = bench_search(
        args.sizes,
        args.dim,
        args.queries,
        args.k,
        device,
        spec=args.index,
        nprobes=tuple(args.nprobe),
        compressed=not args.exact_only,
        seed=args.seed,
        log=_log,
    )
    _save(args, "search", f"d{args.dim}" + ("-exact" if args.exact_only else ""), device, rows)
    return 0


def main(argv=None) -> int:
    """`python -m aa_harness_bench KIND ...`: `aa-harness bench KIND ...` from a checkout, installed or not."""
    p = argparse.ArgumentParser(prog="aa-harness")
    add_parser(p.add_subparsers(dest="command", required=True))
    args = p.parse_args(["bench", *(sys.argv[1:] if argv is None else argv)])
    try:
        return args.fn(args)
    except HarnessError as e:
        print(f"aa-harness: error: {e}", file=sys.stderr)
        return 2
