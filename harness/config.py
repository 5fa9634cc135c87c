"""System configs: plugin dataclasses whose defaults are the published recipe.

`--set key=value` overrides are parsed by the field's annotated type; an unknown key is an
error that suggests close names.
"""
from __future__ import annotations

import dataclasses
import difflib
import json
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
        if tp in (int, float, str):
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
        return cls(**kwargs)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{cls.__name__}: {e}") from None


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
