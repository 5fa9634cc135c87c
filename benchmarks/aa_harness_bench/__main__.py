"""`python -m aa_harness_bench KIND ...` (with benchmarks/ on PYTHONPATH): the bench verb without installing."""

import sys

from aa_harness_bench.cli import main

sys.exit(main())
