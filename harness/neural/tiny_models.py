"""Tiny models built from a config and a seed, with no download: `tiny:bert:0`, `tiny:qwen3:0`.

They stand in for real backbones where the whole pipeline must run in minutes on a CPU (the
smoke experiment, CI): a 2-layer BERT with a WordPiece vocabulary and a 2-layer Qwen3 with a
byte-level BPE vocabulary, both trained on the embedded demo generator's texts. The reference
names the model everywhere (configs, model cards, embedding caches); its folder is built once
under `<cache>/tiny/` and is the same on every machine for the same library versions.
"""

from __future__ import annotations

from pathlib import Path

from harness.errors import HarnessError

PREFIX = "tiny:"
ARCHITECTURES = ("bert", "qwen3")


def parse(ref: str) -> tuple[str, int]:
    """`tiny:ARCH[:SEED]` -> (ARCH, SEED); a malformed reference is one line."""
    parts = ref[len(PREFIX) :].split(":")
    arch, seed = parts[0], parts[1] if len(parts) > 1 else "0"
    if arch not in ARCHITECTURES or len(parts) > 2 or not seed.isdigit():
        raise HarnessError(
            f"model {ref!r}: a tiny model is tiny:ARCH[:SEED] with ARCH one of {', '.join(ARCHITECTURES)} "
            "and SEED a non-negative integer"
        )
    return arch, int(seed)


def tiny_folder(ref: str) -> str:
    """The built folder of a `tiny:` reference (built on first use, atomically)."""
    import os
    import shutil
    import tempfile

    from harness.foundation import locations

    arch, seed = parse(ref)
    folder = locations.cache_dir() / "tiny" / f"{arch}-{seed}"
    if (folder / "config.json").is_file():
        return str(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{arch}-{seed}.", dir=folder.parent))
    try:
        (tiny_bert if arch == "bert" else tiny_qwen3)(tmp, seed)
        try:
            os.rename(tmp, folder)
        except OSError:  # another process built it first
            if not (folder / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return str(folder)


def _corpus() -> list[str]:
    from harness.data.demo import demo_documents

    return [d.fullText for d in demo_documents()[:300]]


def wordpiece_tokenizer(folder: Path):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(
        _corpus(),
        trainers.WordPieceTrainer(vocab_size=600, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]),
    )
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )
    fast.save_pretrained(folder)
    return fast


def bpe_tokenizer(folder: Path, base: Path | None = None):
    """A byte-level BPE trained on the demo texts, or the tokenizer in `base` when given."""
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    if base is not None:
        tok = AutoTokenizer.from_pretrained(base)
    else:
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

        raw = Tokenizer(models.BPE())
        raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        raw.decoder = decoders.ByteLevel()
        raw.train_from_iterator(
            _corpus(),
            trainers.BpeTrainer(
                vocab_size=800, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
            ),
        )
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
    cfg = BertConfig(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=544,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        pad_token_id=tok.pad_token_id,
    )
    BertModel(cfg).save_pretrained(folder)
    return folder


def tiny_qwen3(folder: Path, seed: int = 0, tokenizer: Path | None = None) -> Path:
    import torch
    from transformers import Qwen3Config, Qwen3Model

    tok = bpe_tokenizer(folder, tokenizer)
    torch.manual_seed(seed)
    cfg = Qwen3Config(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=1024,
        pad_token_id=tok.pad_token_id,
        attention_dropout=0.0,
    )
    Qwen3Model(cfg).save_pretrained(folder)
    return folder
