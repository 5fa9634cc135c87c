"""Config keys added after results and model ids were first made, with the value everything made
before them had (fp8: the frozen base's products in FP8, harness.neural.fast.fp8_linear).

A result, or a model card's recipe, without such a key reads as having that value: adding a setting
never makes an earlier result look made with another config, and never changes an earlier model's id.
"""

from __future__ import annotations

from typing import Any, Mapping

LATER_KEYS: dict[str, Any] = {"fp8": False}


def at_earlier_value(key: str, value: Any) -> bool:
    """Whether `value` is the one everything made before `key` existed had."""
    return key in LATER_KEYS and value == LATER_KEYS[key] and type(value) is type(LATER_KEYS[key])


def without_earlier_values(config: Mapping[str, Any]) -> dict[str, Any]:
    """The config less the later keys that hold their earlier value, as it was written before them."""
    return {k: v for k, v in config.items() if not at_earlier_value(k, v)}
