#!/usr/bin/env bash
# The harness as a user installs it: build the wheel, install it (not editable, without the
# neural extra) into a fresh venv, run the quick start from an empty folder with its own home,
# then check that nothing was written into site-packages or the working folder, and that the
# results and pages equal the development install's.
# Usage: .ci/wheel_check.sh [PYTHON]  (PYTHON: the development environment's interpreter,
# which needs `build` and `setuptools-scm`; default: python)
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
py="${1:-python}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

"$py" -m build --wheel --no-isolation --outdir "$tmp/dist" . >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; exit 1; }
rm -rf build harness/_version.py.orig
wheel="$(ls "$tmp"/dist/aa_harness-*.whl)"
# Listed into a variable, not piped: under pipefail, `grep -q` leaving early kills unzip with SIGPIPE.
listing="$(unzip -Z1 "$wheel")"
grep -qx "harness/splits/demo/seed-0.json" <<<"$listing" || { echo "wheel check: the record is not in the wheel"; exit 1; }

"$py" -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install --quiet "$wheel" >"$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log"; exit 1; }
site="$("$tmp/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
aa="$tmp/venv/bin/aa-harness"
echo "wheel check: $("$aa" --version) from $(basename "$wheel"), installed in $site"

snapshot() { (cd "$1" && find . -path '*/__pycache__' -prune -o -type f -printf '%p %s %T@\n' | sort); }
work="$tmp/work"   # the user's own git repository: the harness must record its own commit, not this one
mkdir -p "$work" && git -C "$work" init -q && git -C "$work" -c user.name=u -c user.email=u@e commit -q --allow-empty -m user
snapshot "$site" >"$tmp/site.before"; snapshot "$work" >"$tmp/work.before"

export AA_HARNESS_HOME="$tmp/home" AA_HARNESS_CACHE="$tmp/cache"
unset AA_HARNESS_RUNS_DIR AA_HARNESS_GIT_COMMIT PYTHONPATH
(
  cd "$work"
  "$aa" run bm25 char-ngram --collection demo --seeds 0 --no-progress
  "$aa" leaderboard --no-plots >/dev/null
  "$aa" export >/dev/null
  "$aa" compare bm25 char-ngram --collection demo --resamples 2000 >"$tmp/compare.txt"
)
grep -m1 "paired queries" "$tmp/compare.txt" || { cat "$tmp/compare.txt"; exit 1; }
if grep -q "author clusters" "$tmp/compare.txt"; then
  grep -q " 30 author clusters" "$tmp/compare.txt" || { echo "wheel check: compare does not report 30 author clusters"; exit 1; }
  echo "wheel check: compare reports 30 author clusters for demo seed 0"
fi

# The development install, on the same command, in its own home.
dev_home="$tmp/dev-home"
(cd "$tmp" && AA_HARNESS_HOME="$dev_home" PYTHONPATH="$repo" "$py" -m harness run bm25 char-ngram --collection demo \
  --seeds 0 --no-progress 2>/dev/null)
cp -r "$tmp/home/runs" "$tmp/wheel-runs"
(cd "$tmp" && AA_HARNESS_HOME="$dev_home" PYTHONPATH="$repo" "$py" -m harness leaderboard --runs-dir "$tmp/wheel-runs" \
  --out "$tmp/dev-pages" --no-plots >/dev/null)
"$py" - "$tmp" "$repo" <<'PY'
import gzip, json, subprocess, sys
from pathlib import Path

tmp, repo = Path(sys.argv[1]), Path(sys.argv[2])
head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
user = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp / "work", capture_output=True, text=True).stdout.strip()
for system in ("bm25", "char-ngram"):
    wheel = tmp / "home/runs/demo" / system / "seed-0.json"
    dev = tmp / "dev-home/runs/demo" / system / "seed-0.json"
    a, b = json.loads(wheel.read_text()), json.loads(dev.read_text())
    for key in ("metrics", "split_sha256", "per_genre", "first_needle_rank", "config"):
        assert a[key] == b[key], f"{system}: {key} differs between the wheel and the development install"
    ranks = [gzip.decompress(p.with_name("seed-0.rankings.jsonl.gz").read_bytes()) for p in (wheel, dev)]
    assert ranks[0] == ranks[1], f"{system}: rankings differ"
    commit = a["provenance"]["git_commit"]
    assert commit != user and head.startswith(commit[:7]), f"{system}: recorded commit {commit!r}, harness {head}"
    assert a["provenance"]["harness_version"] not in ("", "unknown"), a["provenance"]
    m = a["metrics"]
    print(f"wheel check: {system} demo seed 0 equals the development install's: "
          + ", ".join(f"{k} {m[k]:.4f}" for k in sorted(m)) + f"; commit {commit[:12]}")
pages = sorted(p.relative_to(tmp / "home/leaderboards") for p in (tmp / "home/leaderboards").rglob("*.md"))
for rel in pages:
    assert (tmp / "home/leaderboards" / rel).read_bytes() == (tmp / "dev-pages" / rel).read_bytes(), f"{rel} differs"
    assert str(tmp) not in (tmp / "home/leaderboards" / rel).read_text(), f"{rel} names a machine path"
print(f"wheel check: the development install writes the same {len(pages)} pages from a copy of the wheel's runs")
assert (tmp / "home/export/leaderboard.csv").is_file()
PY
snapshot "$site" >"$tmp/site.after"; snapshot "$work" >"$tmp/work.after"
diff "$tmp/site.before" "$tmp/site.after" || { echo "wheel check: something was written into site-packages"; exit 1; }
diff "$tmp/work.before" "$tmp/work.after" || { echo "wheel check: something was written into the working folder"; exit 1; }
echo "wheel check: nothing written into site-packages or the working folder; ok"
