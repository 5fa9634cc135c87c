"""Causal attention over one pack of documents, by kernel: which one the packed path should call.

Qwen3-0.6B's attention shape (16 query heads, 8 key/value heads, head_dim 128), bf16, a
pack of ~64K tokens of documents 150-512 tokens long (length-sorted, as the packer makes
them). Prints ms per call and TFLOP/s of the causal work (2 x sum(L^2) x heads x head_dim).

    python benchmarks/attention_kernels.py
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F


def bench(fn, reps: int = 20) -> float:
    for _ in range(3):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / reps


def main() -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention.varlen import varlen_attn

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    lengths = np.sort(rng.integers(150, 513, 400))[::-1]
    lengths = lengths[np.cumsum(lengths) <= 65536]
    total, n, width = int(lengths.sum()), len(lengths), int(lengths.max())
    hq, hk, d = 16, 8, 128
    q = torch.randn(total, hq, d, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(total, hk, d, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(total, hk, d, device="cuda", dtype=torch.bfloat16)
    cu = torch.zeros(n + 1, dtype=torch.int32, device="cuda")
    cu[1:] = torch.as_tensor(np.cumsum(lengths), device="cuda")
    flops = 2.0 * float((lengths.astype(np.float64) ** 2).sum()) * hq * d
    k_rep, v_rep = k.repeat_interleave(2, 1), v.repeat_interleave(2, 1)
    # padded [n, heads, width, d] views for SDPA
    rows = torch.repeat_interleave(torch.arange(n, device="cuda"), torch.as_tensor(lengths, device="cuda"))
    cols = torch.arange(total, device="cuda") - cu[:-1].long()[rows]

    def pad(x):
        out = x.new_zeros((n, width, x.shape[1], d))
        out[rows, cols] = x
        return out.transpose(1, 2)

    qp, kp, vp = pad(q), pad(k_rep), pad(v_rep)
    print(f"{n} documents, {total} tokens, longest {width}; causal work {flops / 1e9:.1f} GFLOP")
    results = {}
    results["varlen, repeated kv heads"] = lambda: varlen_attn(
        q, k_rep, v_rep, cu, cu, width, width, window_size=(-1, 0)
    )
    try:
        varlen_attn(q, k, v, cu, cu, width, width, window_size=(-1, 0))
        results["varlen, native GQA"] = lambda: varlen_attn(q, k, v, cu, cu, width, width, window_size=(-1, 0))
    except Exception as e:  # noqa: BLE001
        print("varlen native GQA:", type(e).__name__, str(e)[:120])
    for name, backend in [
        ("flash", SDPBackend.FLASH_ATTENTION),
        ("cudnn", SDPBackend.CUDNN_ATTENTION),
        ("efficient", SDPBackend.EFFICIENT_ATTENTION),
    ]:

        def run(backend=backend):
            with sdpa_kernel([backend]):
                return F.scaled_dot_product_attention(qp, kp, vp, is_causal=True)

        try:
            run()
            results[f"padded SDPA {name}"] = run
        except Exception as e:  # noqa: BLE001
            print(f"padded SDPA {name}:", type(e).__name__, str(e)[:120])
    results["padding + unpadding copies"] = lambda: (pad(q), pad(k_rep), pad(v_rep), qp.transpose(1, 2)[rows, cols])
    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention

        doc = rows.int()

        def mask(b, h, qi, ki):
            return (doc[qi] == doc[ki]) & (qi >= ki)

        block = create_block_mask(mask, None, None, total, total, device="cuda")
        flex = torch.compile(flex_attention)
        q4, k4, v4 = q.transpose(0, 1)[None], k.transpose(0, 1)[None], v.transpose(0, 1)[None]
        flex(q4, k4, v4, block_mask=block, enable_gqa=True)
        results["flex_attention, document mask, GQA"] = lambda: flex(q4, k4, v4, block_mask=block, enable_gqa=True)
    except Exception as e:  # noqa: BLE001
        print("flex:", type(e).__name__, str(e)[:160])
    for name, fn in results.items():
        ms = bench(fn)
        print(f"{name:40s} {ms:8.3f} ms  {flops / ms / 1e9:7.1f} TFLOP/s")


if __name__ == "__main__":
    main()
