"""The reference the harness's fast LoRA training steps are checked against: the naive Hugging
Face + PEFT steps (the paper's setup) and the first-step comparison of two paths.

This is a test and benchmark reference, not product code: the harness never imports it. The
tests (`tests/neural/test_fast_train.py`) and `aa-harness bench train` compare the harness's packed,
fused retriever step and shared-prefix reranker step with these on the same batches: the first
step's loss and LoRA gradients, dropout off, before any optimiser step.
"""

from __future__ import annotations

from typing import Callable, Sequence

import torch
import torch.nn.functional as F

from harness.neural.batching import right_padded
from harness.neural.pooling import last_token_pool, mean_pool

LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def with_lora(model, *, r: int = 16, alpha: int = 32, dropout: float = 0.05):
    """The paper's LoRA on every projection (PEFT, FEATURE_EXTRACTION); the base is frozen."""
    from peft import LoraConfig, TaskType, get_peft_model

    cfg = LoraConfig(
        r=r,
        lora_alpha=alpha,
        lora_dropout=dropout,
        target_modules=list(LORA_TARGETS),
        bias="none",
        task_type=TaskType.FEATURE_EXTRACTION,
    )
    peft = get_peft_model(model, cfg)
    for name, p in peft.named_parameters():
        if "lora_" in name:
            p.data = p.data.float()  # fp32 master weights, as the harness's training keeps them
            if "lora_B" in name:  # PEFT starts B at zero; a random B makes the gradient check see every path
                torch.nn.init.normal_(p, std=0.02)
    return peft


def _autocast(device):
    from harness.neural.device import autocast

    return autocast(device, device.type == "cuda")


def naive_retriever_loss(peft, finish, rows_a, rows_b, device, *, tau: float, pad_id: int = 0) -> torch.Tensor:
    from harness.neural.losses import supcon_loss

    ids, mask = right_padded([*rows_a, *rows_b], pad_id)
    ids, mask = ids.to(device), mask.to(device)
    with _autocast(device):
        hidden = peft(input_ids=ids, attention_mask=mask).last_hidden_state
        emb = finish(mean_pool(hidden, mask))
    n = len(rows_a)
    return supcon_loss(emb[:n], emb[n:], tau, cosine=False)


def naive_reranker_loss(peft, head, groups, device, *, tau: float = 1.0, pad_id: int = 0) -> torch.Tensor:
    from harness.neural.losses import candidates_loss

    scores = []
    for prefix, cands in groups:
        ids, mask = right_padded([list(prefix) + list(c) for c in cands], pad_id)
        ids, mask = ids.to(device), mask.to(device)
        with _autocast(device):
            scores.append(head(last_token_pool(peft(input_ids=ids, attention_mask=mask).last_hidden_state, mask))[:, 0])
    return candidates_loss(scores, tau) / len(groups)


def lora_gradients(peft, extra: Sequence[torch.nn.Parameter] = ()) -> dict[str, torch.Tensor]:
    out = {
        n: p.grad.detach().float().clone() for n, p in peft.named_parameters() if p.requires_grad and p.grad is not None
    }
    for i, p in enumerate(extra):
        out[f"extra.{i}"] = p.grad.detach().float().clone()
    return out


def gradient_agreement(got: dict, want: dict) -> dict:
    """Relative error of the whole LoRA gradient and the worst tensor's, cosine of the two; in fp64
    (in fp32 the cosine of the 8B shape's 44M gradient values came out above 1)."""
    missing = sorted(set(want) ^ set(got))
    g = torch.cat([got[k].flatten() for k in sorted(want)]).double()
    w = torch.cat([want[k].flatten() for k in sorted(want)]).double()
    per = [
        float(
            torch.linalg.norm(got[k].double() - want[k].double()) / torch.linalg.norm(want[k].double()).clamp(min=1e-30)
        )
        for k in want
    ]
    return {
        "rel_error": float(torch.linalg.norm(g - w) / torch.linalg.norm(w).clamp(min=1e-30)),
        "rel_error_worst_tensor": max(per),
        "cosine": float(F.cosine_similarity(g, w, dim=0)),
        "tensors": len(want),
        "mismatched_names": missing,
    }


def _dropout_off(peft, *, keep_train: bool = False):
    """Dropout off for the check; returns a function that restores every module's mode.

    keep_train False: eval mode (the harness decoder reads the PEFT model's mode for its LoRA
    dropout). keep_train True: train mode with only the dropout modules in eval, so Hugging
    Face's gradient checkpointing, which runs only in train mode, recomputes the layers as in
    the timed steps; in eval mode the naive first step kept every layer's activations (tens of
    GB at the 8B and 12B shapes)."""
    modes = [(m, m.training) for m in peft.modules()]
    if keep_train:
        peft.train()
        for m in peft.modules():
            if isinstance(m, torch.nn.Dropout):
                m.eval()
    else:
        peft.eval()

    def restore():
        for m, was in modes:
            m.training = was

    return restore


def first_step(
    peft, loss: Callable[[], torch.Tensor], extra: Sequence[torch.nn.Parameter] = (), *, keep_train: bool = False
) -> dict:
    """One path's first step, dropout off, no optimiser step: {"loss": float, "gradients": {name:
    fp32 tensor on the host}}, gradients cleared after. keep_train: see `_dropout_off`."""

    def clear():
        peft.zero_grad(set_to_none=True)
        for p in extra:
            p.grad = None

    restore = _dropout_off(peft, keep_train=keep_train)
    try:
        clear()
        value = loss()
        value.backward()
        grads = {k: v.cpu() for k, v in lora_gradients(peft, extra).items()}
        value = float(value.detach())
        clear()
    finally:
        restore()
    return {"loss": value, "gradients": grads}


def compare_first_steps(naive: dict, harness: dict) -> dict:
    """Loss and LoRA-gradient agreement of two `first_step` results (the naive one the reference)."""
    a, b = naive["loss"], harness["loss"]
    return {
        "naive_loss": a,
        "harness_loss": b,
        "loss_rel_error": abs(a - b) / max(abs(a), 1e-30),
        "gradients": gradient_agreement(harness["gradients"], naive["gradients"]),
    }


def first_step_check(
    peft, naive: Callable[[], torch.Tensor], fast: Callable[[], torch.Tensor], extra: Sequence[torch.nn.Parameter] = ()
) -> dict:
    """Loss and LoRA-gradient agreement of the two paths on one batch and one model (eval mode,
    no dropout, no optimiser step)."""
    return compare_first_steps(first_step(peft, naive, extra), first_step(peft, fast, extra))
