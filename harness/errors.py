"""Errors the harness reports to the user as one clear line, without a traceback."""

from __future__ import annotations


class HarnessError(Exception):
    """Bad input or setup: the message says where and what."""


class DataError(HarnessError):
    """A collection file is missing, malformed, or breaks a rule of the canonical format."""


class UnknownNameError(HarnessError):
    """An unknown system, collection or config key; the message suggests close names."""


class ConfigError(HarnessError):
    """A system config value that cannot be parsed or is out of range."""
