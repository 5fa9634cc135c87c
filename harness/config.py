"""System configs: plugin dataclasses whose defaults are the published recipe.

`--set key=value` overrides are parsed by the field's annotated type; an unknown key is an
error that suggests close names.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import typing
from typing import Any, Mapping

from harness.errors import ConfigError, UnknownNameError


def _parse(value: str, tp: Any, key: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        if value.lower() in ("none", "null") and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _parse(value, inner[0], key)
    try:
        if tp is bool:
            if value.lower() in ("1", "true", "yes", "on"):
                return True
            if value.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if tp is float:
            number = float(value)
            if not math.isfinite(number):
                raise ConfigError(f"config key {key!r}: {value!r} is not a finite number")
            return number
        if tp in (int, str):
            return tp(value)
        if origin is tuple:
            parts = [p for p in value.replace("(", "").replace(")", "").split(",") if p.strip()]
            if len(args) == 2 and args[1] is Ellipsis:
                return tuple(_parse(p.strip(), args[0], key) for p in parts)
            if len(parts) != len(args):
                raise ValueError(value)
            return tuple(_parse(p.strip(), a, key) for p, a in zip(parts, args))
        if origin in (list, dict) or tp in (list, dict):
            return json.loads(value)
    except (ValueError, json.JSONDecodeError):
        raise ConfigError(f"config key {key!r}: cannot read {value!r} as {getattr(tp, '__name__', tp)}") from None
    return value


def build_config(cls: type, overrides: Mapping[str, str] | None = None) -> Any:
    """Instantiate config dataclass `cls` from string overrides."""
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    kwargs = {}
    for key, raw in (overrides or {}).items():
        if key not in names:
            close = difflib.get_close_matches(key, names, n=3, cutoff=0.5)
            hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            raise UnknownNameError(f"{cls.__name__} has no key {key!r}{hint} (keys: {', '.join(names)})")
        kwargs[key] = raw if not isinstance(raw, str) else _parse(raw, hints[key], key)
    try:
        config = cls(**kwargs)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{cls.__name__}: {e}") from None
    for f in dataclasses.fields(config):
        bad = _non_finite(getattr(config, f.name))
        if bad is not None:
            raise ConfigError(f"{cls.__name__}: {f.name} = {bad!r} is not a finite number")
    return config


def _non_finite(value: Any) -> float | None:
    """The first NaN or infinite float in a config value (nested lists, tuples, dicts too), else None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else value
    if isinstance(value, (list, tuple)):
        items = value
    elif isinstance(value, dict):
        items = list(value.values())
    else:
        return None
    for v in items:
        bad = _non_finite(v)
        if bad is not None:
            return bad
    return None


def config_dict(config: Any) -> dict[str, Any]:
    """JSON-ready dict of a config (tuples become lists)."""
    return json.loads(json.dumps(dataclasses.asdict(config)))


def field_purposes(cls: type) -> dict[str, str]:
    """key -> purpose ("recipe", "training run", "inference", "runtime", "model", "settings"): the `purpose`
    (its own or inherited) of the first class, base first, that declares the key
    (harness.neural.recipe's sections); "settings" for a key no section declares (every key of
    a config without sections, e.g. BM25's)."""
    owner: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        for name in klass.__dict__.get("__annotations__", {}):
            if name != "purpose" and name not in owner:
                owner[name] = getattr(klass, "purpose", "") or "settings"
    return {f.name: owner.get(f.name, "settings") for f in dataclasses.fields(cls)}


def config_sections(config: Any) -> dict[str, dict[str, Any]]:
    """{purpose: {key: value}} of a config instance, JSON-ready; the flat `config_dict` is their union."""
    flat = config_dict(config)
    out: dict[str, dict[str, Any]] = {}
    for name, purpose in field_purposes(type(config)).items():
        out.setdefault(purpose, {})[name] = flat[name]
    return out


def parse_set_args(items: list[str] | None) -> dict[str, str]:
    out = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--set expects key=value, got {item!r}")
        out[key.strip()] = value
    return out


def _type_name(tp: Any) -> str:
    if isinstance(tp, type):
        return tp.__name__
    return str(tp).replace("typing.", "")


def _docstring_help(cls: type) -> dict[str, str]:
    """ "key: text" lines of the class docstring (continuation lines joined), keyed by field name."""
    import inspect

    names = {f.name for f in dataclasses.fields(cls)}
    out: dict[str, str] = {}
    current = None
    for line in inspect.cleandoc(cls.__doc__ or "").splitlines():
        stripped = line.strip()
        head, sep, rest = stripped.partition(":")
        keys = [k.strip() for k in head.split(",")] if sep else []
        if keys and all(k in names for k in keys):
            # "device: ... dtype: ..." on one line: split at each further "key:"
            for k in keys:
                out[k] = rest.strip()
            current = keys
        elif current and stripped:
            for k in current:
                out[k] = f"{out[k]} {stripped}".strip()
        else:
            current = None
    return out


def _comment_help(cls: type) -> dict[str, str]:
    """Trailing `# comment` of each field's line in the class source."""
    import inspect
    import io
    import tokenize

    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return {}
    out: dict[str, str] = {}
    names = {f.name for f in dataclasses.fields(cls)}
    line_name: dict[int, str] = {}
    for line_no, line in enumerate(source.splitlines(), 1):
        head = line.strip().split(":", 1)[0]
        if head in names and line.startswith("    ") and not line.startswith("     "):
            line_name[line_no] = head
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT and tok.start[0] in line_name:
                out[line_name[tok.start[0]]] = tok.string.lstrip("#").strip()
    except (tokenize.TokenError, IndentationError):
        pass
    return out


def config_fields(cls: type) -> list[dict[str, Any]]:
    """Each config key with its type, default and help, for `aa-harness systems NAME`.

    Help comes from the field's metadata ("help"), else its line in the class docstring
    ("key: text"), else the comment after the field in the source.
    """
    import re

    hints = typing.get_type_hints(cls)
    doc: dict[str, str] = {}
    comments: dict[str, str] = {}
    for klass in reversed(cls.__mro__):  # a subclass's words win over its base's
        if dataclasses.is_dataclass(klass):
            doc.update(_docstring_help(klass))
            comments.update(_comment_help(klass))
    names = [f.name for f in dataclasses.fields(cls)]
    for key, text in list(doc.items()):  # "device: ... dtype: ..." on one docstring line
        for other in names:
            m = re.search(rf"(?:^|\.\s+){re.escape(other)}:\s*", text)
            if other != key and m:
                doc.setdefault(other, text[m.end() :])
                doc[key] = text = text[: m.start() + 1].strip()
    rows = []
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = "(required)"
        help_ = f.metadata.get("help") or doc.get(f.name) or comments.get(f.name) or ""
        rows.append({"key": f.name, "type": _type_name(hints.get(f.name, f.type)), "default": default, "help": help_})
    return rows
