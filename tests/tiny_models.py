"""Tiny models built from configs (no download), saved as ordinary Hugging Face folders.

Tokenizers: a WordPiece (BERT-style) and a byte-level BPE (Qwen3-style) trained on the fly
on the synthetic demo texts; when ../shared's Qwen3 tokenizer has been fetched into the
model cache, the tiny Qwen3 uses it instead.
"""
from __future__ import annotations

from pathlib import Path

from harness.data.demo import demo_documents

MODELS = Path(__file__).resolve().parent.parent / ".cache" / "models"


def _corpus() -> list[str]:
    return [d.fullText for d in demo_documents()[:300]]


def wordpiece_tokenizer(folder: Path):
    from tokenizers import (
        Tokenizer,
        models,
        normalizers,
        pre_tokenizers,
        processors,
        trainers,
    )
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(_corpus(), trainers.WordPieceTrainer(vocab_size=600, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
                                                       special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]")
    fast.save_pretrained(folder)
    return fast


def bpe_tokenizer(folder: Path):
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    from harness.neural.models import ModelNotFoundError, resolve_model

    try:  # found the way the CLI finds models ($AA_HARNESS_MODEL_DIR, then .cache/models), never the hub
        shared = Path(resolve_model("qwen3-tokenizer", hub=False))
    except ModelNotFoundError:
        shared = MODELS / "qwen3-tokenizer"
    if (shared / "tokenizer.json").is_file():
        tok = AutoTokenizer.from_pretrained(shared)
    else:
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

        raw = Tokenizer(models.BPE())
        raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        raw.decoder = decoders.ByteLevel()
        raw.train_from_iterator(_corpus(), trainers.BpeTrainer(vocab_size=800, special_tokens=["<|endoftext|>"],
                                                               initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
        tok = PreTrainedTokenizerFast(tokenizer_object=raw, eos_token="<|endoftext|>", pad_token="<|endoftext|>")
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.save_pretrained(folder)
    return tok


def tiny_bert(folder: Path, seed: int = 0) -> Path:
    import torch
    from transformers import BertConfig, BertModel

    tok = wordpiece_tokenizer(folder)
    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                     max_position_embeddings=544, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                     pad_token_id=tok.pad_token_id)
    BertModel(cfg).save_pretrained(folder)
    return folder


def tiny_qwen3(folder: Path, seed: int = 0) -> Path:
    import torch
    from transformers import Qwen3Config, Qwen3Model

    tok = bpe_tokenizer(folder)
    torch.manual_seed(seed)
    cfg = Qwen3Config(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=1024,
                      pad_token_id=tok.pad_token_id, attention_dropout=0.0)
    Qwen3Model(cfg).save_pretrained(folder)
    return folder
