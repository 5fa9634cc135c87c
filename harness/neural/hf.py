"""Loading Hugging Face backbones by hub id or local folder (GGUF folders included).

A GGUF file is dequantized on every load (about a minute for a 0.5B model), so the first load
keeps the dequantized weights and tokenizer under `<cache>/dequantized/<weights sha256>-<dtype>-<loader>/`
and later loads read that folder (seconds). The model's identity stays the GGUF file's.

Transformers names a GGUF file's tensors as a causal LM's ("model.layers.…"): loaded into a bare
`AutoModel` they match no key and every weight silently keeps its random initialisation. So the
causal LM is loaded and its base model kept, and the result is checked against the file.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from pathlib import Path

import torch

from harness.neural.embed_cache import cache_root
from harness.neural.models import resolve_model, weights_fingerprint

GGUF_LOADER = "causal-lm-base"


def _gguf_file(path: str) -> str | None:
    folder = Path(path)
    if folder.is_dir() and not (folder / "config.json").exists():
        ggufs = sorted(folder.glob("*.gguf"))
        if len(ggufs) == 1:
            return ggufs[0].name
    return None


def dequantized_folder(path: str, gguf: str, dtype: torch.dtype) -> Path:
    """Where the dequantized copy of the GGUF folder `path` in `dtype` is kept (it may not exist
    yet), named by the folder's weights fingerprint (its one `gguf` file)."""
    file = Path(path, gguf).resolve()
    stat = file.stat()  # past the fingerprint's size limit: the file's place, size and time
    key = weights_fingerprint(path) or hashlib.sha256(f"{file}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()
    # the loader's name is in the key: a copy made by an earlier (wrong) loader is never read
    return cache_root() / "dequantized" / f"{key[:24]}-{str(dtype).removeprefix('torch.')}-{GGUF_LOADER}"


def _with_pad(tok):
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return tok


def load_tokenizer(ref: str):
    from transformers import AutoTokenizer

    path = resolve_model(ref)
    gguf = _gguf_file(path)
    return _with_pad(AutoTokenizer.from_pretrained(path, **({"gguf_file": gguf} if gguf else {})))


def _load_gguf(path: str, gguf: str, dtype: torch.dtype):
    """Model and tokenizer of a GGUF folder, through the dequantized cache."""
    from transformers import AutoModel, AutoModelForCausalLM, AutoTokenizer

    cached = dequantized_folder(path, gguf, dtype)
    if (cached / "config.json").is_file():
        return AutoModel.from_pretrained(cached, dtype=dtype), _with_pad(AutoTokenizer.from_pretrained(cached))
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, gguf_file=gguf).base_model
    check_loaded_from_gguf(model, Path(path, gguf))
    tok = AutoTokenizer.from_pretrained(path, gguf_file=gguf)
    # Written aside and renamed, so a crash never leaves a half folder that later loads trust.
    # Each process writes its own partial folder: two steps started side by side dequantize the
    # same file at once, and the first to finish keeps its copy.
    partial = cached.with_name(f"{cached.name}.partial-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        if _save_dense(model, partial):
            tok.save_pretrained(partial)
            partial.rename(cached)
    except OSError:  # a read-only or full cache, or a copy another process kept first: nothing lost
        pass
    shutil.rmtree(partial, ignore_errors=True)
    return model, _with_pad(tok)


# small tensors stored unquantized: (the base model's name, the GGUF file's name)
_CHECKED = (("layers.0.input_layernorm.weight", "blk.0.attn_norm.weight"), ("norm.weight", "output_norm.weight"))


def check_loaded_from_gguf(model, file: Path) -> None:
    """The base model's first-layer and final norms must be the file's: a loader that matched no
    key leaves them at their initial ones (and one that matched only some keys, as a bare
    `AutoModel` does, loads the final norm but no layer). A tensor one side lacks is not checked."""
    from gguf import GGUFReader
    from gguf.quants import dequantize

    from harness.errors import HarnessError

    params = dict(model.named_parameters())
    wanted = {gguf_name: params[name] for name, gguf_name in _CHECKED if name in params}
    if not wanted:
        return
    for t in GGUFReader(str(file)).tensors:
        if t.name in wanted:
            want = torch.from_numpy(dequantize(t.data, t.tensor_type).reshape(-1).astype("float32"))
            got = wanted[t.name].detach().float().reshape(-1).cpu()
            # bf16 keeps 8 bits of mantissa: a relative error of 2^-8 is rounding, anything more is not the file
            if got.shape != want.shape or not torch.allclose(got, want, rtol=2**-7, atol=1e-6):
                raise HarnessError(
                    f"{file}: the loaded weights are not the file's ({t.name} differs): "
                    "this transformers version's GGUF loading left them uninitialised"
                )


def _save_dense(model, folder: Path) -> bool:
    """The dequantized model as a plain Hugging Face folder (config + safetensors). Transformers
    refuses to save a model loaded from GGUF, though its weights are dense once dequantized;
    False (nothing kept) when they are not, e.g. weights left in GGUF blocks for a kernel."""
    import copy

    from safetensors.torch import save_file

    state = model.state_dict()
    if not state or not all(t.is_floating_point() for t in state.values()):
        return False
    config = copy.deepcopy(model.config)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    folder.mkdir(parents=True)
    config.save_pretrained(folder)
    # clone: tied weights share storage, which safetensors refuses
    save_file({k: t.detach().clone().contiguous() for k, t in state.items()}, str(folder / "model.safetensors"))
    return True


def load_backbone(ref: str, dtype: torch.dtype = torch.float32):
    """AutoModel (the bare encoder/decoder, no LM head) and its tokenizer.

    The dtype is explicit (float32 unless asked): weights saved in half precision would
    otherwise load as half and meet float32 activations on the CPU.
    """
    from transformers import AutoModel

    path = resolve_model(ref)
    gguf = _gguf_file(path)
    if gguf:
        model, tok = _load_gguf(path, gguf, dtype)
        return model, tok, path
    return AutoModel.from_pretrained(path, dtype=dtype), load_tokenizer(ref), path
