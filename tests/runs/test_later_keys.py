"""A config key added after results and model ids were made reads as its earlier value where it is
absent: earlier results stay current and of one config with new ones, earlier model ids stay."""

from __future__ import annotations

from harness.runs.later_keys import LATER_KEYS, without_earlier_values
from harness.runs.model_cards import model_id
from harness.runs.results import config_differences


def test_an_absent_later_key_is_its_earlier_value_and_any_other_value_differs():
    assert LATER_KEYS["fp8"] is False
    old = {"system": "s", "config": {"lr": 1e-4}}
    assert config_differences({"system": "s", "config": {"lr": 1e-4, "fp8": False}}, old) == []
    assert config_differences({"system": "s", "config": {"lr": 1e-4, "fp8": True}}, old) == ["fp8 (True vs '<absent>')"]
    assert without_earlier_values({"fp8": 0, "lr": 1}) == {"fp8": 0, "lr": 1}  # 0 is not False's type


def test_model_ids_made_before_a_later_key_stay_and_its_other_values_change_them():
    card = {"system": "s", "recipe": {"lr": 1e-4}, "training_data": {"sha256": "ab"}}
    same = {**card, "recipe": {"lr": 1e-4, "fp8": False}}
    other = {**card, "recipe": {"lr": 1e-4, "fp8": True}}
    assert model_id(card) == model_id(same) != model_id(other)
