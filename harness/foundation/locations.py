"""Every place the harness reads or writes, resolved in one order: the explicit flag, then an
environment variable, then a per-user folder (platformdirs).

Nothing is resolved from where the harness is installed except its read-only record (the
built-in collections' split manifests and topic labels: the package data `harness.splits`, which
is the top-level `splits/` of a checkout). `aa-harness where` prints every location as resolved now.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

APP = "aa-harness"
HOME_ENV = "AA_HARNESS_HOME"
RUNS_ENV = "AA_HARNESS_RUNS_DIR"
CORPORA_ENV = "AA_HARNESS_CORPORA"
HRS_ENV = "AA_HARNESS_HRS_DIR"
CACHE_ENV = "AA_HARNESS_CACHE"
MODEL_DIR_ENV = "AA_HARNESS_MODEL_DIR"
BENCH_ENV = "AA_HARNESS_BENCH_DIR"
STORE_ENV = "AA_HARNESS_STORE"


# The folders of a checkout that hold the project's own files: a home, cache or store there would mix
# per-user files into what is committed.
CHECKOUT_FOLDERS = (
    "harness",
    "plugins",
    "leaderboards",
    "splits",
    "tests",
    "docs",
    "examples",
    "benchmarks",
    "experiments",
)


def _forbidden(record_ok: bool) -> list[tuple[Path, str]]:
    """(folder, what it is) of the places a folder the harness writes may not be in: the installed
    package (its record included), the folder it is installed in (site-packages) unless that is a
    checkout, a checkout's split manifests, and, unless `record_ok`, all its committed folders."""
    package = Path(__file__).resolve().parents[1]  # harness/, above this foundation/ folder
    parent = package.parent
    if (parent / "pyproject.toml").is_file():  # an editable install: the package lives in a checkout
        if record_ok:  # results may be written into the checkout's record of runs (CONTRIBUTING.md)
            return [(package, "the harness package"), (parent / "splits", "the checkout's split manifests")]
        return [(parent / name, "the checkout's committed folders") for name in CHECKOUT_FOLDERS]
    return [(package, "the installed harness package"), (parent, "the folder the harness is installed in")]


def checked_output(path: str | Path | None, flag: str) -> Path | None:
    """An output a command's flag names (a file or folder), refused inside the installed package."""
    return None if path is None else checked_place(Path(path), flag, record_ok=True)


def checked_place(path: Path, what: str, env: str | None = None, *, record_ok: bool = False) -> Path:
    """`path`, unless it lies inside the installed package, its site-packages or (unless `record_ok`,
    for results and pages) a checkout's committed folders: a one-line HarnessError naming the setting."""
    from harness.errors import HarnessError

    resolved = path.resolve()
    for folder, kind in _forbidden(record_ok):
        if resolved == folder or folder in resolved.parents:
            how = f" (${env})" if env and os.environ.get(env) else ""
            raise HarnessError(f"{what}{how} {path} is inside {kind} ({folder}); choose a folder of your own")
    return path


def _pick(flag: str | Path | None, env: str | None, default) -> Path:
    """flag > $env > default() (a callable, so a default is computed only when it is used)."""
    if flag is not None and str(flag) != "":
        return Path(flag).expanduser()
    if env and os.environ.get(env):
        return Path(os.environ[env]).expanduser()
    return Path(default())


def home() -> Path:
    """$AA_HARNESS_HOME, else the per-user data folder (e.g. ~/.local/share/aa-harness)."""
    from platformdirs import user_data_dir

    return checked_place(_pick(None, HOME_ENV, lambda: user_data_dir(APP, appauthor=False)), "the home", HOME_ENV)


def runs_dir(flag: str | Path | None = None) -> Path:
    """Results: --runs-dir, $AA_HARNESS_RUNS_DIR, else <home>/runs."""
    return checked_place(_pick(flag, RUNS_ENV, lambda: home() / "runs"), "the runs folder", RUNS_ENV, record_ok=True)


def built_splits_dir(runs: str | Path) -> Path:
    """Manifests that runs build (path collections, seeds the record lacks): `<runs>-splits/` beside the runs."""
    runs = Path(runs)
    return runs.parent / f"{runs.name}-splits"


def record_splits_dir() -> Path:
    """The read-only record: built-in collections' manifests and topic labels, shipped as package data
    (`harness.splits`). A source tree put on PYTHONPATH without being installed (as on a machine that
    cannot install it) has no `harness.splits` package: its record is the checkout's `splits/`."""
    from importlib.resources import files

    try:
        return Path(str(files("harness.splits")))
    except ModuleNotFoundError:
        return Path(__file__).resolve().parents[2] / "splits"  # <checkout>/harness/foundation/locations.py


def manifest_dirs(runs: str | Path, splits_dir: str | Path | None = None) -> list[Path]:
    """Where a run's manifests are looked up: --splits-dir alone when given; else the record, then
    `<runs>-splits/`."""
    if splits_dir is not None:
        return [Path(splits_dir)]
    return [record_splits_dir(), built_splits_dir(runs)]


def corpora_dir(flag: str | Path | None = None) -> Path:
    """Public corpora: --data-dir, $AA_HARNESS_CORPORA, else <home>/corpora."""
    return _pick(flag, CORPORA_ENV, lambda: home() / "corpora")


def hrs_dir(flag: str | Path | None = None) -> Path | None:
    """HIATUS HRS data: --data-dir, $AA_HARNESS_HRS_DIR; no default (restricted data)."""
    if flag is None and not os.environ.get(HRS_ENV):
        return None
    return _pick(flag, HRS_ENV, lambda: "")


def cache_dir() -> Path:
    """Embeddings, dequantized weights, local model copies: $AA_HARNESS_CACHE, else the per-user cache."""
    from platformdirs import user_cache_dir

    return checked_place(_pick(None, CACHE_ENV, lambda: user_cache_dir(APP, appauthor=False)), "the cache", CACHE_ENV)


def model_dirs() -> list[Path]:
    """Folders of local model copies, in lookup order: $AA_HARNESS_MODEL_DIR, then <cache>/models
    (then, in harness.neural.models, the Hugging Face cache and the hub)."""
    out = []
    if os.environ.get(MODEL_DIR_ENV):
        out.append(Path(os.environ[MODEL_DIR_ENV]).expanduser())
    if cache_dir() / "models" not in out:
        out.append(cache_dir() / "models")
    return out


def hf_hub_cache() -> Path:
    """The local Hugging Face hub cache ($HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    return Path(os.environ.get("HF_HOME", Path("~/.cache/huggingface").expanduser())) / "hub"


def store_dir() -> Path:
    """What `aa-harness reproduce` makes besides results (generated and curated data, trained models,
    by content address): $AA_HARNESS_STORE, else <home>/store."""
    return checked_place(_pick(None, STORE_ENV, lambda: home() / "store"), "the store", STORE_ENV)


def leaderboard_dir(flag: str | Path | None = None) -> Path:
    """Leaderboard pages: leaderboard --out, else <home>/leaderboards."""
    return checked_place(_pick(flag, None, lambda: home() / "leaderboards"), "the pages folder", record_ok=True)


def export_dir(flag: str | Path | None = None) -> Path:
    """Exported tables: export --out, else <home>/export."""
    return checked_place(_pick(flag, None, lambda: home() / "export"), "the export folder", record_ok=True)


def bench_dir(flag: str | Path | None = None) -> Path:
    """Benchmark results: --out, $AA_HARNESS_BENCH_DIR, else <home>/bench."""
    return checked_place(
        _pick(flag, BENCH_ENV, lambda: home() / "bench"), "the bench results folder", BENCH_ENV, record_ok=True
    )


@dataclass(frozen=True)
class Location:
    what: str
    flag: str
    env: str
    path: str


def all_locations() -> list[Location]:
    """Every location as resolved now, for `aa-harness where`."""
    hrs = hrs_dir()
    models = model_dirs()
    return [
        Location("home", "", HOME_ENV, str(home())),
        Location("runs (results)", "--runs-dir", RUNS_ENV, str(runs_dir())),
        Location("manifests the runs build", "--splits-dir", "", str(built_splits_dir(runs_dir()))),
        Location("record: built-in manifests, topic labels (read-only)", "", "", str(record_splits_dir())),
        Location("public corpora", "--data-dir", CORPORA_ENV, str(corpora_dir())),
        Location("HIATUS HRS data", "--data-dir", HRS_ENV, str(hrs) if hrs else "(not set)"),
        Location("cache (embeddings, dequantized weights)", "", CACHE_ENV, str(cache_dir())),
        Location(
            "local model copies",
            "",
            MODEL_DIR_ENV,
            " then ".join(str(p) for p in models) + f" then {hf_hub_cache()} then the hub",
        ),
        Location("store: curated data, trained models (reproduce)", "", STORE_ENV, str(store_dir())),
        Location("leaderboard pages", "leaderboard --out", "", str(leaderboard_dir())),
        Location("exports", "export --out", "", str(export_dir())),
        Location("bench results", "bench --out", BENCH_ENV, str(bench_dir())),
    ]
