"""The SADIRI-v2 reranker: an LLM cross-encoder over `query U+2980 candidate` (Eq. 3), its
saved form (PEFT adapter + 1 x E head + JSON), and scoring. Its training: reranker_training.py."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from harness.api import (
    Document,
    HarnessError,
    TokenEncoder,
    atomic_write_text,
    autocast,
    checkpoint_backbone,
    device_label,
    embed_features,
    enable_fast_path,
    load_backbone,
    pick_device,
    weights_fingerprint,
)
from plugins.sadiri_v2.config import RerankerConfig, parse_strategy
from plugins.sadiri_v2.pair_memo import ScoreMemo, TokenMemo
from plugins.sadiri_v2.retriever import _dtype, check_fp8, lora_config

MODEL_JSON = "aa_model.json"
# queries whose scores may wait on the device before one copy reads them back: enough for the host
# to run ahead of the device, few enough that the progress bar tells the truth
RUN_AHEAD = 8


class PairScorer(TokenEncoder):
    """score(q, c) = W . h_last(q U+2980 c): one number per pair, whatever its batch mates or padding side."""

    def __init__(self, backbone, tokenizer, head: torch.nn.Linear, config: RerankerConfig, identity: str):
        super().__init__(backbone, tokenizer, config.max_query_tokens + config.max_candidate_tokens)
        self.head = head
        self.config = config
        self._identity = identity
        self.delimiter_ids = tokenizer(config.delimiter, add_special_tokens=False)["input_ids"]
        self.bos = [tokenizer.bos_token_id] if tokenizer.bos_token_id is not None else []
        self.eos = [tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else []
        self.token_ids = TokenMemo(
            lambda texts, n: tokenizer(texts, add_special_tokens=False, truncation=True, max_length=n)["input_ids"]
        )

    def pair_parts(self, query: str, candidates: Sequence[str]) -> tuple[list[int], list[list[int]]]:
        """(shared prefix BOS q U+2980, one continuation c EOS per candidate). Each side is truncated
        on its own; special tokens (BOS, EOS) come outside that budget."""
        c = self.config
        (q,) = self.token_ids([query], c.max_query_tokens)
        cs = self.token_ids(candidates, c.max_candidate_tokens)
        return self.bos + q + self.delimiter_ids, [d + self.eos for d in cs]

    def pair_features(self, query: str, candidates: Sequence[str]) -> list[list[int]]:
        prefix, continuations = self.pair_parts(query, candidates)
        return [prefix + d for d in continuations]

    pooling = "last"

    def finish(self, last: torch.Tensor) -> torch.Tensor:
        return self.head(last.to(self.head.weight.dtype))

    def hidden_states(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        positions = (attention_mask.cumsum(-1) - 1).clamp(min=0)  # left padding must not shift positions
        return self.backbone(
            input_ids=input_ids, attention_mask=attention_mask, position_ids=positions
        ).last_hidden_state

    def identity(self) -> str:
        return self._identity

    def enable_gradient_checkpointing(self) -> bool:
        return checkpoint_backbone(
            self.backbone.get_base_model() if hasattr(self.backbone, "get_base_model") else self.backbone
        )


def new_for_training(config: RerankerConfig) -> PairScorer:
    from peft import get_peft_model

    base, tokenizer, path = load_backbone(config.backbone, dtype=_dtype())
    model = get_peft_model(base, lora_config(config))
    head = torch.nn.Linear(base.config.hidden_size, 1, bias=False)
    return PairScorer(model, tokenizer, head, config, f"untrained|{path}")


def load(config: RerankerConfig) -> PairScorer:
    from peft import PeftModel
    from safetensors.torch import load_file

    if config.model is None:
        raise HarnessError(
            "sadiri-v2-reranker needs a trained model: --model DIR (from `aa-harness train sadiri-v2-reranker`)"
        )
    folder = Path(config.model)
    if not (folder / MODEL_JSON).is_file():
        raise HarnessError(f"{folder}: not a trained sadiri-v2-reranker folder ({MODEL_JSON} missing)")
    meta = json.loads((folder / MODEL_JSON).read_text())
    if parse_strategy(meta["strategy"]) != parse_strategy(config.strategy):
        raise HarnessError(
            f"{folder} was trained with strategy {meta['strategy']!r}; pass --set strategy={meta['strategy']} "
            "so the run's config says what it ran"
        )
    base, tokenizer, _ = load_backbone(config.backbone, dtype=_dtype())
    model = PeftModel.from_pretrained(base, folder / "adapter")
    head = torch.nn.Linear(meta["hidden_size"], 1, bias=False)
    head.load_state_dict(load_file(folder / "head.safetensors"))
    ident = hashlib.sha256((weights_fingerprint(str(folder)) or str(folder)).encode()).hexdigest()
    return PairScorer(model, tokenizer, head, config, f"sadiri-v2-reranker|{config.backbone}|{ident}")


def save(model: PairScorer, folder: Path, config: RerankerConfig) -> None:
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    model.backbone.save_pretrained(folder / "adapter")
    save_file(
        {k: v.detach().float().cpu().contiguous() for k, v in model.head.state_dict().items()},
        folder / "head.safetensors",
    )
    atomic_write_text(
        folder / MODEL_JSON,
        json.dumps(
            {
                "system": "sadiri-v2-reranker",
                "backbone": config.backbone,
                "hidden_size": model.head.in_features,
                "strategy": "+".join(parse_strategy(config.strategy)),
                "negatives": config.negatives,
                "negative_sampling": config.negative_sampling,
                "negative_pool": config.negative_pool,
                "max_query_tokens": config.max_query_tokens,
                "max_candidate_tokens": config.max_candidate_tokens,
                "delimiter": config.delimiter,
            },
            indent=1,
        ),
    )


class RerankerSystem:
    """Rescores a first stage's candidates: rerank(queries, candidate lists) -> score arrays.

    By default each query is encoded once and its keys and values serve all its candidates
    (prefix reuse, `--set prefix_reuse=false` for concatenated pairs); the LoRA adapter is
    merged into the weights, since nothing trains here. With fp8 the merged base's products are
    FP8 ones (prefix reuse on the fused decoder only). A pair met again (a later seed's lists
    share most of an earlier one's) takes the score it got the first time (pair_memo).
    """

    def __init__(self, config: RerankerConfig):
        self.config = config
        self.device = pick_device(config.device)
        check_fp8(config, config.prefix_reuse, "prefix_reuse")
        self.model = load(config)
        if hasattr(self.model.backbone, "merge_and_unload"):
            self.model.backbone = self.model.backbone.merge_and_unload()
        self.model.to(self.device).eval()
        if self.device.type == "cuda":
            self.model.to(torch.bfloat16)
        # "padded"/"packed" (the fused decoder; prefixes always run packed) or "aa_causal" reuse the
        # query's keys and values; None scores concatenated pairs
        self.fast_path = enable_fast_path(self.model, fp8=config.fp8) if config.prefix_reuse else None
        self.memo = ScoreMemo()
        self._last_call = (0, 0)  # (scored, reused) of the latest rerank()

    def rerank(self, queries: Sequence[Document], candidate_lists: Sequence[Sequence[Document]]) -> list[np.ndarray]:
        before = (self.memo.scored, self.memo.reused)
        out = []
        todo_q, todo_c, pending = [], [], []
        for q, cands in zip(queries, candidate_lists):
            texts = [c.fullText for c in cands]
            known, todo = self.memo.split(q.fullText, texts)
            out.append(known)
            if todo:
                todo_q.append(q)
                todo_c.append([cands[i] for i in todo])
                pending.append((len(out) - 1, texts, todo))
        fresh = self._rerank_unknown(todo_q, todo_c) if todo_q else []
        for (k, texts, todo), scores, q in zip(pending, fresh, todo_q):
            out[k] = self.memo.fill(q.fullText, texts, out[k], todo, scores)
        self._last_call = (self.memo.scored - before[0], self.memo.reused - before[1])
        return out

    def _rerank_unknown(self, queries, candidate_lists) -> list[np.ndarray]:
        if self.fast_path:
            return self._rerank_prefix_reuse(queries, candidate_lists)
        return self._rerank_pairs(queries, candidate_lists)

    def _score_query(self, prefix: list[int], continuations: list[list[int]]) -> np.ndarray | torch.Tensor:
        """[n, 1] scores: on the fused path left on the device (read back a few queries later), else on the host."""
        from harness.api import retry_on_oom

        # Out of GPU memory: halve the token budget and retry (said once).
        return retry_on_oom(
            lambda budget: self._score_query_at(prefix, continuations, budget),
            self.config.score_max_tokens,
            what="reranking",
        )

    def _score_query_at(
        self, prefix: list[int], continuations: list[list[int]], max_tokens: int
    ) -> np.ndarray | torch.Tensor:
        if self.model.fused_decoder is not None:
            from harness.api import score_fused_continuations_on_device

            return score_fused_continuations_on_device(
                self.model.fused_decoder, self.model.finish, prefix, continuations, self.device, max_tokens=max_tokens
            )
        from harness.api import score_continuations

        with autocast(self.device):
            return score_continuations(
                self.model.backbone,
                self.model.finish,
                prefix,
                continuations,
                self.device,
                pad_id=self.model.pad_id,
                max_tokens=max_tokens,
            )

    def _rerank_prefix_reuse(self, queries, candidate_lists) -> list[np.ndarray]:
        from tqdm.auto import tqdm

        out: list = []
        in_flight: list[int] = []  # queries whose scores are still on the device

        def read_back() -> None:  # one copy for the queries in flight
            scores = torch.cat([out[k][:, 0] for k in in_flight]).cpu().numpy()
            start = 0
            for k in in_flight:
                n = len(out[k])
                out[k] = scores[start : start + n]
                start += n
            in_flight.clear()

        pairs = sum(len(c) for c in candidate_lists)
        for q, cands in tqdm(
            list(zip(queries, candidate_lists)), desc="reranking", unit="query", file=sys.stderr, disable=pairs <= 512
        ):
            if not cands:
                out.append(np.zeros(0, dtype=np.float32))
                continue
            prefix, continuations = self.model.pair_parts(q.fullText, [c.fullText for c in cands])
            scores = self._score_query(prefix, continuations)
            if isinstance(scores, np.ndarray):
                out.append(scores[:, 0])
                continue
            # Read back a few queries later, not now: the host runs ahead, laying out and launching
            # the next queries (the prefix's forward is launch-bound) while the device works.
            out.append(scores)
            in_flight.append(len(out) - 1)
            if len(in_flight) >= RUN_AHEAD:
                read_back()
        if in_flight:
            read_back()
        return out

    def _rerank_pairs(self, queries, candidate_lists) -> list[np.ndarray]:
        features, owner = [], []
        for qi, (q, cands) in enumerate(zip(queries, candidate_lists)):
            features += self.model.pair_features(q.fullText, [c.fullText for c in cands])
            owner += [qi] * len(cands)
        scores = (
            embed_features(
                self.model,
                features,
                self.device,
                max_tokens=self.config.score_max_tokens,
                progress=len(features) > 512,
                desc="reranking",
            )[:, 0]
            if features
            else np.zeros(0)
        )
        out, start = [], 0
        for cands in candidate_lists:
            out.append(scores[start : start + len(cands)])
            start += len(cands)
        return out

    def device_name(self) -> str:
        return device_label(self.device)

    def describe(self) -> dict:
        return {
            "model_identity": self.model.identity(),
            "strategy": "+".join(parse_strategy(self.config.strategy)),
            "fast_path": self.fast_path,
            "pairs_scored": self._last_call[0],
            "pairs_reused": self._last_call[1],
            **({"fp8": "e4m3 frozen base"} if self.config.fp8 else {}),
        }
