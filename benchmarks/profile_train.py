"""Where the harness's retriever training step spends its time: the top kernels (torch.profiler)
of one step (forward, backward, Adam) at the bench's batch, 16 authors x 2 documents.

    python benchmarks/profile_train.py --arch qwen3-0.6b [--no-compile] [--checkpoint]

Prints the GPU time of the step's kernels against its wall time (the gap is time the GPU
waits for the host: launch-bound work) and the kernels by GPU time.
"""

from __future__ import annotations

import argparse
import time

import torch


def main() -> None:
    from aa_harness_bench.archs import build_model
    from aa_harness_bench.reference import with_lora
    from aa_harness_bench.workload import random_rows
    from harness.neural.fast.lora_train import LoraFusedDecoder, retriever_loss

    p = argparse.ArgumentParser()
    p.add_argument("--arch", default="qwen3-0.6b")
    p.add_argument("--authors", type=int, default=16)
    p.add_argument("--no-compile", action="store_true")
    p.add_argument("--checkpoint", action="store_true")
    args = p.parse_args()
    device = torch.device("cuda")
    model = build_model(args.arch, device, torch.bfloat16)
    peft = with_lora(model)
    peft.train()
    hidden = model.config.hidden_size
    proj = torch.nn.Linear(hidden, hidden // 2).to(device)
    decoder = LoraFusedDecoder(peft, compile=not args.no_compile, checkpoint=args.checkpoint)
    params = [q for q in peft.parameters() if q.requires_grad] + list(proj.parameters())
    opt = torch.optim.Adam(params, lr=1e-5, fused=True)
    n = args.authors

    def step(seed: int) -> None:
        rows = random_rows(2 * n, 150, 512, model.config.vocab_size, seed)
        loss = retriever_loss(decoder, lambda x: proj(x.float()), rows[:n], rows[n:], device, tau=0.01)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for s in range(3):  # compile, warm up
        step(s)
    torch.cuda.synchronize()
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    ) as prof:
        t = time.perf_counter()
        step(10)
        torch.cuda.synchronize()
        wall = time.perf_counter() - t
    events = prof.key_averages()
    # the kernels themselves (an aten op's row repeats its kernels' time)
    kernel_rows = [e for e in events if e.device_type == torch.autograd.DeviceType.CUDA]
    gpu = sum(e.self_device_time_total for e in kernel_rows) / 1e6
    kernels = sum(e.count for e in kernel_rows)
    host = sum(e.self_cpu_time_total for e in events) / 1e6
    print(
        f"{args.arch} {'uncompiled' if args.no_compile else 'compiled'}"
        f"{', checkpointed' if args.checkpoint else ''}: step {wall:.3f} s wall (under the profiler), "
        f"{gpu:.3f} s of kernels ({kernels} launches), {host:.3f} s of host work in torch ops"
    )
    print(events.table(sort_by="self_device_time_total", row_limit=25, max_name_column_width=60))


if __name__ == "__main__":
    main()
