"""`python -m harness` is the same as the `aa-harness` command."""

from harness.cli import entry

entry()
