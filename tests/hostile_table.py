"""Run the hostile cases and print how many there are per subject and verdict, and how many held.

    PYTHONPATH=. python tests/hostile_table.py          # the fast cases
    PYTHONPATH=. python tests/hostile_table.py --slow   # also the kill -9 loops and other slow cases

A case is a test carrying `@pytest.mark.hostile(subject, verdict)` (see tests/hostile.py); its
verdict is what it asserts: "clear error" (exit 2, one `aa-harness: error:` line, no traceback,
nothing written) or "held" (the attack changes nothing that is shown or kept).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
# Every test file that holds a case, so a new case is counted wherever it is written.
FILES = sorted(p.relative_to(HERE) for p in HERE.rglob("test_*.py") if "@hostile(" in p.read_text(encoding="utf-8"))


class Tally:
    def __init__(self):
        self.cases: dict[str, tuple[str, str, str]] = {}

    def pytest_collection_modifyitems(self, items):
        for item in items:
            mark = item.get_closest_marker("hostile")
            if mark is not None:
                self.cases[item.nodeid] = (mark.kwargs["subject"], mark.kwargs["verdict"], "not run")

    def pytest_deselected(self, items):
        for item in items:
            self.cases.pop(item.nodeid, None)

    def pytest_runtest_logreport(self, report):
        if report.nodeid in self.cases and (report.when == "call" or report.outcome != "passed"):
            subject, verdict, _ = self.cases[report.nodeid]
            self.cases[report.nodeid] = (subject, verdict, report.outcome)


def main(argv: list[str]) -> int:
    tally = Tally()
    marks = "hostile" if "--slow" in argv else "hostile and not slow"
    pytest.main(["-q", "-p", "no:cacheprovider", "-m", marks, *[str(HERE / f) for f in FILES]], plugins=[tally])
    counts = Counter((s, v) for s, v, _ in tally.cases.values())
    passed = Counter((s, v) for s, v, o in tally.cases.values() if o == "passed")
    skipped = Counter((s, v) for s, v, o in tally.cases.values() if o == "skipped")
    print("\n| class | verdict | cases | as asserted | skipped here |")
    print("|---|---|---|---|---|")
    for key in sorted(counts):
        print(f"| {key[0]} | {key[1]} | {counts[key]} | {passed[key]} | {skipped[key]} |")
    print(f"| all | | {sum(counts.values())} | {sum(passed.values())} | {sum(skipped.values())} |")
    failed = [n for n, (_, _, o) in tally.cases.items() if o not in ("passed", "skipped")]
    for n in failed:
        print(f"NOT AS ASSERTED: {n}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
