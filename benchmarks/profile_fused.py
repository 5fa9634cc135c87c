"""Where a fused forward spends its GPU time: the top kernels of a few packs (torch.profiler).

python benchmarks/profile_fused.py --arch qwen3-0.6b --max-tokens 65536
"""

from __future__ import annotations

import argparse

import torch


def main() -> None:
    from aa_harness_bench.archs import build_model
    from aa_harness_bench.encode import harness_encoder
    from aa_harness_bench.workload import random_rows
    from harness.neural.encoder import embed_features

    p = argparse.ArgumentParser()
    p.add_argument("--arch", default="qwen3-0.6b")
    p.add_argument("--max-tokens", type=int, default=65536)
    p.add_argument("--path", default="padded")
    p.add_argument("--docs", type=int, default=1024)
    args = p.parse_args()
    device = torch.device("cuda")
    model = build_model(args.arch, device, torch.bfloat16)
    enc = harness_encoder(model, args.path)
    rows = random_rows(args.docs, 150, 512, model.config.vocab_size, 0)
    embed_features(enc, rows, device, max_tokens=args.max_tokens, amp=False)  # compile, warm up
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        embed_features(enc, rows, device, max_tokens=args.max_tokens, amp=False)
        torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=22, max_name_column_width=70))


if __name__ == "__main__":
    main()
