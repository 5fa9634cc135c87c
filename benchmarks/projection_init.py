"""The SADIRI-v2 retriever's first logits under each projection init (CPU, fp32).

    python -m benchmarks.projection_init --backbone .cache/models/qwen2.5-0.5b-gguf [--docs 16] [--tokens 256]

Builds the retriever as training would (seeded, LoRA at its init: B = 0, so the backbone's
function), embeds pairs of documents by the first authors of the curated-blogs-like pan19-en
collection (or the synthetic demo when the corpora are absent), and prints, for each
`projection_init`, the hidden states' norm, the projected vectors' norm, the spread of the
logits s(d, d')/tau (dot product, tau 0.01) and the first SupCon loss (chance: log(2N - 1)).
"""

from __future__ import annotations

import argparse
import json
import math

import torch

from harness.neural.losses import supcon_loss


def pairs(n_authors: int) -> list[tuple[str, str]]:
    from harness.data.demo import demo_documents

    by: dict[str, list[str]] = {}
    for d in demo_documents():
        if d.authorIDs[0].startswith("demo:fg"):
            by.setdefault(d.authorIDs[0], []).append(d.fullText)
    return [(t[0], t[1]) for _, t in sorted(by.items())[:n_authors]]


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backbone", required=True)
    ap.add_argument("--docs", type=int, default=16, help="authors (two documents each)")
    ap.add_argument("--tokens", type=int, default=256)
    args = ap.parse_args(argv)
    from plugins.sadiri_v2.config import PROJECTION_INITS, RetrieverConfig
    from plugins.sadiri_v2.retriever import new_for_training, new_projection

    torch.manual_seed(0)
    model = new_for_training(RetrieverConfig(backbone=args.backbone, max_length=args.tokens, device="cpu")).eval()
    texts = [t for pair in pairs(args.docs) for t in pair]
    with torch.no_grad():
        batch = model.collate(model.featurize(texts))
        pooled = model.pool(model.hidden_states(**batch), batch["attention_mask"]).float()
    hidden = pooled.shape[1]
    out = {
        "backbone": args.backbone,
        "hidden": hidden,
        "authors": args.docs,
        "tokens": args.tokens,
        "pooled_norm_mean": round(float(pooled.norm(dim=1).mean()), 2),
        "chance_loss": round(math.log(2 * args.docs - 1), 3),
    }
    for init in PROJECTION_INITS:
        torch.manual_seed(0)
        proj = new_projection(hidden, init)
        with torch.no_grad():
            v = proj(pooled)
            a, b = v[0::2], v[1::2]
            logits = (v @ v.T / 0.01).masked_fill(torch.eye(len(v), dtype=torch.bool), float("nan"))
            off = logits[~torch.isnan(logits)]
            out[init] = {
                "projected_norm_mean": round(float(v.norm(dim=1).mean()), 3),
                "logit_abs_mean": round(float(off.abs().mean()), 2),
                "logit_sd": round(float(off.std()), 2),
                "logit_max": round(float(off.max()), 2),
                "first_loss": round(float(supcon_loss(a, b, 0.01, cosine=False)), 3),
            }
    print(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
