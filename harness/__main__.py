"""`python -m harness` is the same as the `aa-harness` command."""

from harness.cli import main

raise SystemExit(main())
