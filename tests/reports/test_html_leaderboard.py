"""The HTML leaderboard (`aa-harness leaderboard --html DIR`), driven in a real headless Chromium.

Skipped when Chromium or its driver is absent, unless AA_HARNESS_REQUIRE_BROWSER=1 (CI sets it).
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from harness.cli import main
from tests.conftest import ROOT, doc, write_jsonl, write_record

pytestmark = pytest.mark.slow  # runs two systems and a browser

HOSTILE_GENRE = '<script>window.__pwned = 1</script>"><img src=x id=pwned>'
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,900",
)


def _binary(*names: str) -> str | None:
    return next((found for n in names if (found := shutil.which(n))), None)


@pytest.fixture(scope="module")
def browser():
    chromium, driver = _binary("chromium", "chromium-browser"), _binary("chromedriver")
    if not (chromium and driver):
        if os.environ.get("AA_HARNESS_REQUIRE_BROWSER") == "1":
            pytest.fail("Chromium and chromedriver are required (AA_HARNESS_REQUIRE_BROWSER=1)")
        pytest.skip("Chromium or chromedriver not installed")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="aa-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(service=Service(driver), options=options)
    try:
        yield drv
    finally:
        drv.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Two systems on a small path collection whose genres are hostile HTML, over two seeds."""
    tmp = tmp_path_factory.mktemp("html")
    genres = (HOSTILE_GENRE, "letters & <notes>", "plain")
    recs = [
        doc(
            10 * a + g,
            f"author{a}",
            genres[g],
            f"document {g} of author {a}: " + " ".join(f"w{(a * 7 + k) % 23}" for k in range(40)),
        )
        for a in range(12)
        for g in range(3)
    ]
    collection = write_jsonl(tmp / "mixed.jsonl", recs)
    runs = tmp / "runs"
    for system in ("bm25", "char-ngram"):
        assert (
            main(
                [
                    "run",
                    system,
                    "--collection",
                    str(collection),
                    "--seeds",
                    "0",
                    "1001",
                    "--runs-dir",
                    str(runs),
                    "--no-progress",
                ]
            )
            == 0
        )
    out = tmp / "site"
    assert main(["leaderboard", "--runs-dir", str(runs), "--out", str(tmp / "pages"), "--html", str(out)]) == 0
    return out


def _severe(drv) -> list[dict]:
    return [e for e in drv.get_log("browser") if e["level"] == "SEVERE"]


def _column(drv, table, title: str):
    from selenium.webdriver.common.by import By

    heads = table.find_elements(By.CSS_SELECTOR, "thead th")
    index = next(i for i, th in enumerate(heads) if th.text.strip().startswith(title))
    return heads[index], index


def test_index_loads_without_console_errors(browser, site):
    from selenium.webdriver.common.by import By

    browser.get((site / "index.html").as_uri())
    assert browser.find_elements(By.CSS_SELECTOR, "table.sortable")
    assert browser.find_elements(By.CSS_SELECTOR, "figure img")  # the Success@k plot, inlined
    table = browser.find_element(By.CSS_SELECTOR, "table.sortable")
    _, col = _column(browser, table, "differs from the paper")
    assert all(r.find_elements(By.TAG_NAME, "td")[col].text for r in table.find_elements(By.CSS_SELECTOR, "tbody tr"))
    assert _severe(browser) == []


def test_a_header_click_sorts_both_ways(browser, site):
    from selenium.webdriver.common.by import By

    browser.get((site / "index.html").as_uri())
    table = browser.find_element(By.CSS_SELECTOR, "table.sortable")
    th, col = _column(browser, table, "Success@8 pooled")

    def values():
        return [
            float(r.find_elements(By.TAG_NAME, "td")[col].get_attribute("data-sort"))
            for r in table.find_elements(By.CSS_SELECTOR, "tbody tr")
        ]

    def names():
        return [
            r.find_element(By.CSS_SELECTOR, "td.run a").text for r in table.find_elements(By.CSS_SELECTOR, "tbody tr")
        ]

    assert th.get_attribute("aria-sort") is None
    th.find_element(By.TAG_NAME, "button").click()
    assert th.get_attribute("aria-sort") == "descending"
    down, first_names = values(), names()
    assert down == sorted(down, reverse=True) and len(set(down)) > 1
    th.find_element(By.TAG_NAME, "button").click()
    assert th.get_attribute("aria-sort") == "ascending"
    assert values() == sorted(down) and names() == first_names[::-1]
    run_th, _ = _column(browser, table, "run")
    run_th.find_element(By.TAG_NAME, "button").click()
    assert run_th.get_attribute("aria-sort") == "ascending" and th.get_attribute("aria-sort") is None
    assert names() == sorted(first_names, key=str.lower)
    assert _severe(browser) == []


def test_a_run_link_opens_its_page(browser, site):
    from selenium.webdriver.common.by import By

    browser.get((site / "index.html").as_uri())
    link = browser.find_element(By.CSS_SELECTOR, "td.run a")
    name = link.text
    link.click()
    assert browser.find_element(By.TAG_NAME, "h1").text == name
    headings = [h.text for h in browser.find_elements(By.TAG_NAME, "h2")]
    assert {"Model card", "Per seed", "Per query genre", "Provenance"} <= set(headings)
    assert _severe(browser) == []
    browser.find_element(By.CSS_SELECTOR, "nav a").click()
    assert browser.find_element(By.TAG_NAME, "h1").text == "Leaderboard"


def test_hostile_names_are_shown_as_text(browser, site):
    from selenium.webdriver.common.by import By

    pages = [site / "index.html", *sorted((site / "runs").rglob("*.html"))]
    assert len(pages) == 3
    for page in pages[1:]:
        browser.get(page.as_uri())
        cells = [td.text for td in browser.find_elements(By.CSS_SELECTOR, "td")]
        assert HOSTILE_GENRE in cells and "letters & <notes>" in cells  # shown, not interpreted
        assert browser.execute_script("return window.__pwned === undefined")
        assert not browser.find_elements(By.ID, "pwned")
        assert _severe(browser) == []
    assert all("<script>window" not in p.read_text(encoding="utf-8") for p in pages)


def test_hostile_names_are_escaped_in_the_page_source(site):
    """Without a browser too: a genre that is HTML reaches every page as text only."""
    from html import escape

    pages = [site / "index.html", *sorted((site / "runs").rglob("*.html"))]
    texts = [p.read_text(encoding="utf-8") for p in pages]
    assert all("<script>window" not in t and "<img src=x" not in t and "<notes>" not in t for t in texts)
    assert all(escape(HOSTILE_GENRE) in t and "letters &amp; &lt;notes&gt;" in t for t in texts[1:])


def test_the_page_allows_no_fetch(site):
    text = (site / "index.html").read_text(encoding="utf-8")
    csp = text.split('http-equiv="Content-Security-Policy" content="', 1)[1].split('"', 1)[0]
    assert "default-src &#x27;none&#x27;" in csp and "img-src data:" in csp and "unsafe-inline" not in csp
    assert "http://" not in text and "https://" not in text and 'src="data:image/png;base64,' in text


def test_regenerating_keeps_what_the_harness_did_not_write(tmp_path):
    from harness.errors import HarnessError
    from harness.reports.html_site import run_page_path, write_site

    out = tmp_path / "site"
    write_site(out, {"index.html": "<p>old</p>", run_page_path("c", "gone"): "old", run_page_path("c", "kept"): "old"})
    (out / ".git").mkdir()
    (out / ".git" / "HEAD").write_text("ref: refs/heads/gh-pages\n", encoding="utf-8")
    (out / "CNAME").write_text("leaderboard.example.org\n", encoding="utf-8")
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    write_site(out, {"index.html": "<p>new</p>", run_page_path("c", "kept"): "new"})
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == sorted(
        [".aa-harness-site", ".git/HEAD", "CNAME", "notes.txt", "index.html", run_page_path("c", "kept")]
    )
    assert (out / "CNAME").read_text(encoding="utf-8") == "leaderboard.example.org\n"
    assert (out / "index.html").read_text(encoding="utf-8") == "<p>new</p>"
    assert not [p for p in out.iterdir() if p.name.startswith(".aa-output-set")]

    fresh = tmp_path / "fresh"  # a fresh `git init` is no obstacle; a folder of other files is
    (fresh / ".git").mkdir(parents=True)
    write_site(fresh, {"index.html": "x"})
    assert (fresh / ".git").is_dir() and (fresh / "index.html").is_file()
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep", encoding="utf-8")
    with pytest.raises(HarnessError, match="not a site"):
        write_site(mine, {"index.html": "x"})
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]


SITE_WRITER = """
import sys
from harness.reports.html_site import run_page_path, write_site
n = int(sys.argv[2])
pages = {run_page_path("c", f"run{n}-{i}"): f"set {n}\\n" * 4000 for i in range(30)}
write_site(sys.argv[1], {"index.html": f"set {n}\\n", **pages})
"""


@pytest.mark.hostile(subject="output sets", verdict="held")
def test_kill_9_mid_site_write_leaves_one_whole_site_and_the_users_files(tmp_path):
    """Killed at random moments, then regenerated: the pages are all of one site, CNAME and .git stay."""
    import random
    import signal
    import subprocess
    import sys
    import time

    from harness.foundation.output_set import recover

    root = ROOT
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = tmp_path / "site"
    subprocess.run([sys.executable, "-c", SITE_WRITER, str(out), "0"], check=True, cwd=root, env=env)
    (out / "CNAME").write_text("leaderboard.example.org\n", encoding="utf-8")
    (out / ".git").mkdir()
    rng = random.Random(5)
    for n in range(1, 10):
        p = subprocess.Popen([sys.executable, "-c", SITE_WRITER, str(out), str(n)], cwd=root, env=env)
        time.sleep(rng.uniform(0.1, 0.6))
        p.send_signal(signal.SIGKILL)
        p.wait()
        recover(out)  # what the next write does first
        pages = [p for p in (out / "runs").rglob("*.html")]
        sets = {p.read_text(encoding="utf-8").split("\n")[0] for p in [out / "index.html", *pages]}
        assert len(sets) == 1 and len(pages) == 30, sets
        assert (out / "CNAME").is_file() and (out / ".git").is_dir()


def test_leaderboard_refuses_a_folder_that_is_not_a_site(tmp_path, site, capsys):
    runs = site.parent / "runs"
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "README.md").write_text("mine", encoding="utf-8")
    assert (
        main(
            [
                "leaderboard",
                "--runs-dir",
                str(runs),
                "--out",
                str(tmp_path / "pages"),
                "--no-plots",
                "--html",
                str(folder),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err.startswith("aa-harness: error:") and len(err.strip().splitlines()) == 1
    assert [p.name for p in folder.iterdir()] == ["README.md"]
    assert not (tmp_path / "pages").exists()  # nothing written half-way


def test_pages_and_site_in_one_folder_are_refused_before_anything_is_written(tmp_path, site, capsys):
    runs, both = site.parent / "runs", tmp_path / "lb"
    assert main(["leaderboard", "--runs-dir", str(runs), "--out", str(both), "--html", str(both), "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "need a folder of their own" in err and not both.exists()


def test_stale_runs_are_listed_apart_with_their_reason(tmp_path, site):
    import json

    runs = tmp_path / "runs"
    shutil.copytree(site.parent / "runs", runs)
    shutil.copytree(site.parent / "runs-splits", tmp_path / "runs-splits")
    reason = "made on <v1> of the file"
    (tmp_path / "stale.json").write_text(
        json.dumps({"runs": [{"collection": "mixed", "run": "char-ngram", "manifests": "mixed", "reason": reason}]}),
        encoding="utf-8",
    )
    out = tmp_path / "site"
    record = write_record(tmp_path / "record", runs=runs, pages=tmp_path / "pages", stale=tmp_path / "stale.json")
    assert main(["leaderboard", "--record", str(record), "--no-plots", "--html", str(out)]) == 0
    text = (out / "index.html").read_text(encoding="utf-8")
    tables, stale = text.split("<h2>Stale runs</h2>")
    assert ">char-ngram</a>" not in tables and ">bm25</a>" in tables
    assert "char-ngram" in stale and "made on &lt;v1&gt; of the file" in stale


def test_html_alone_writes_the_site_alone(tmp_path, site, capsys, monkeypatch):
    """`leaderboard --html DIR` once also wrote the Markdown pages into the home folder."""
    monkeypatch.setenv("AA_HARNESS_HOME", str(tmp_path / "home"))
    out = tmp_path / "site"
    assert main(["leaderboard", "--runs-dir", str(site.parent / "runs"), "--no-plots", "--html", str(out)]) == 0
    assert (out / "index.html").is_file()
    assert not (tmp_path / "home" / "leaderboards").exists()  # the home holds the user's key, no pages
    assert "no Markdown pages written (--out DIR writes them beside the site)" in capsys.readouterr().out
