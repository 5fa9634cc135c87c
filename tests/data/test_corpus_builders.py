"""`aa-harness data build`: the public corpus files rebuilt from their public distributions.

The rules are checked on small raw fixtures written here in each distribution's layout (blog XML
files, reddit thread dumps, a PAN problem folder); bad input is one line, exit 2, nothing written.
The slow test rebuilds the real files from the distributions in $AA_HARNESS_RAW_SOURCES (one
subfolder per distribution, named as `aa-harness data build --help` names them) and compares
sha256 with the published files.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import os
import struct
from pathlib import Path

import pytest

from harness.data import builders
from harness.data.builders import blogs, canonical, enron, pan, reddit, rules
from harness.errors import DataError
from tests.hostile import one_line_error, run_cli, snapshot

RAW_ENV = "AA_HARNESS_RAW_SOURCES"


def words(n: int, tag: str = "w") -> str:
    return " ".join(f"{tag}{i}" for i in range(n))


def name_in(salt: str, lo: float, hi: float, prefix: str = "u") -> str:
    """The first name prefix0, prefix1, ... whose pool bucket lies in [lo, hi)."""
    return next(f"{prefix}{i}" for i in range(100_000) if lo <= rules.bucket(salt, f"{prefix}{i}") < hi)


# ---------------------------------------------------------------- the file's bytes


def test_gzip_bytes_are_deterministic_and_carry_the_header_given():
    body = canonical.jsonl_bytes([{"documentID": "d1", "authorIDs": ["a"], "fullText": "é ü", "genre": "g"}] * 50)
    data = canonical.gzip_bytes(body, "x.jsonl.gz.tmp", 1795653113)
    assert data == canonical.gzip_bytes(body, "x.jsonl.gz.tmp", 1795653113)
    assert gzip.decompress(data) == body
    assert data[:4] == b"\x1f\x8b\x08\x08" and struct.unpack("<I", data[4:8])[0] == 1795653113
    assert data[8:10] == b"\x02\xff" and data[10:].startswith(b"x.jsonl.gz.tmp\x00")
    assert b'"fullText": "\xc3\xa9 \xc3\xbc"' in body  # ensure_ascii=False, default separators


def test_gzip_bytes_equal_what_gzip_open_wt_writes(tmp_path):
    """The published files were written with gzip.open(path, "wt"): a sync flush before the final block."""
    text = "".join(json.dumps({"n": i, "t": words(30)}) + "\n" for i in range(200))
    with open(tmp_path / "f.jsonl", "wb") as raw:
        with gzip.GzipFile(filename="f.jsonl", mode="wb", compresslevel=9, fileobj=raw, mtime=12345) as gz:
            gz.write(text.encode())
            gz.flush()
    assert canonical.gzip_bytes(text.encode(), "f.jsonl", 12345) == (tmp_path / "f.jsonl").read_bytes()


def test_bucket_is_a_stable_draw_from_the_id():
    assert (
        rules.bucket("reddit-college", "alice")
        == int(hashlib.sha256(b"reddit-college:alice").hexdigest()[:8], 16) / 2**32
    )
    assert 0 <= rules.bucket("blogs-xl", "123") < 1


def test_decontamination_list_ships_as_package_data():
    assert len(rules.removed_authors("blogs-train")) == 88
    assert len(rules.removed_authors("blogs-train-xl")) == 188
    assert len(rules.removed_authors("reddit-train")) == 1
    assert rules.removed_authors("reddit-xsub") == frozenset()
    gone = sorted(rules.removed_authors("blogs-train"))[0]
    recs = [{"authorIDs": [gone]}, {"authorIDs": ["blogs:kept"]}, {"authorIDs": [gone]}]
    assert rules.decontaminate("blogs-train", recs) == [{"authorIDs": ["blogs:kept"]}]


# ---------------------------------------------------------------- reddit-college


def thread(sid, author, created, title, text, comments=None):
    return {"sid": sid, "title:": title, "text": text, "author": author, "created": created, "comments": comments or {}}


def comment(author, created, text, replies=None):
    return {"author": author, "created": created, "text": text, "replies": replies or {}}


def write_dat(root: Path, threads: dict[str, list[dict]]) -> Path:
    """A reddit-college dat/ folder: the eight subreddit folders, the given threads as files."""
    dat = root / "dat"
    for sub in reddit.SUBREDDITS:
        (dat / sub).mkdir(parents=True, exist_ok=True)
    for sub, ts in threads.items():
        for t in ts:
            (dat / sub / f"{sub}-{t['created']}-{t['sid']}.json").write_text(json.dumps(t), encoding="utf-8")
    return dat


def test_reddit_chunks_are_350_to_600_words_without_quotes():
    posts = [
        (1.0, words(500, "a"), "i1"),
        (2.0, "> " + words(900, "q") + "\n" + words(250, "b"), "i2"),
        (3.0, words(1000, "c"), "i3"),
    ]
    docs = reddit.chunks(posts)
    # 500 a: a document at once; 250 b wait; + 1000 c = 1250 -> 600, then 600, and 50 left over are dropped
    assert [len(d.split()) for d in docs] == [500, 600, 600]
    assert "q0" not in " ".join(docs)
    assert docs[1].split()[0] == "b0" and docs[1].split()[-1] == "c349" and docs[2].split()[-1] == "c949"
    assert reddit.chunks([(1.0, words(349), "x")]) == []
    assert reddit.unquoted_words("keep\n  &gt; quoted\n>also quoted\nthis") == ["keep", "this"]


def test_reddit_pools_by_hash_caps_roles_and_order(tmp_path):
    fg = name_in("reddit-college", 0.15, 0.30, "fg")
    tr = name_in("reddit-college", 0.30, 1.0, "tr")
    res = name_in("reddit-college", 0.0, 0.15, "res")
    bg = name_in("reddit-college", 0.5, 1.0, "bg")
    single_res = name_in("reddit-college", 0.0, 0.5, "sr")
    by_user = {
        fg: [("College", i, f"t{i}") for i in range(10)] + [("Emory", 0, "e")],
        tr: [("GradSchool", i, f"t{i}") for i in range(6)],
        res: [("College", 0, "x"), ("Emory", 0, "y")],
        bg: [("College", 0, "only")],
        single_res: [("Emory", 0, "only")],
    }
    train, xsub = reddit.pools(by_user)
    assert {r["role"] for r in xsub if r["authorIDs"] == [f"reddit:{fg}"]} == {"foreground"}
    assert len([r for r in xsub if r["authorIDs"] == [f"reddit:{fg}"]]) == 8
    assert [r["authorIDs"][0] for r in train] == [f"reddit:{tr}"] * 4 and {r["role"] for r in train} == {"train"}
    assert [r for r in xsub if r["authorIDs"] == [f"reddit:{bg}"]][0]["role"] == "background"
    everyone = {r["authorIDs"][0] for r in train + xsub}
    assert f"reddit:{res}" not in everyone and f"reddit:{single_res}" not in everyone  # reserved
    users = [r["authorIDs"][0] for r in xsub]
    assert users == sorted(users)
    shuffled = list(by_user[fg])
    import random

    random.Random(fg).shuffle(shuffled)
    assert [r["documentID"] for r in xsub if r["authorIDs"] == [f"reddit:{fg}"]] == [
        f"reddit/{s}/{fg}/{i}" for s, i, _ in shuffled[:8]
    ]
    assert all(r["genre"] == "reddit:" + r["documentID"].split("/")[1] for r in xsub)
    assert list(xsub[0]) == ["documentID", "authorIDs", "fullText", "genre", "source", "role"]


def test_reddit_build_reads_threads_once_and_skips_deleted_users(tmp_path):
    bg = name_in("reddit-college", 0.5, 1.0, "bg")
    dat = write_dat(
        tmp_path,
        {
            "College": [
                thread(
                    "s1",
                    bg,
                    10,
                    "Title",
                    words(200, "t"),
                    {
                        "c1": comment(bg, 11, words(200, "c"), {"c2": comment("AutoModerator", 12, words(400))}),
                        "c3": comment("[deleted]", 13, words(400)),
                        "c4": comment(bg, 14, "[removed]"),
                    },
                ),
                thread("s1", bg, 20, "Again", words(400, "dup")),  # the same thread id again: skipped
            ],
            "Emory": [thread("s2", "someone", 30, "x", "y", {"c1": comment(bg, 31, words(999, "seen"))})],
        },
    )
    (dat / "College" / "broken.json").write_text("{not json", encoding="utf-8")
    out = reddit.build(dat)
    mine = [r for r in out["reddit-xsub"] if r["authorIDs"] == [f"reddit:{bg}"]]
    assert len(mine) == 1 and mine[0]["role"] == "background"
    assert mine[0]["fullText"].split()[:2] == ["Title", "t0"] and len(mine[0]["fullText"].split()) == 401
    assert "dup0" not in mine[0]["fullText"] and "seen0" not in mine[0]["fullText"]


# ---------------------------------------------------------------- Blog Authorship Corpus


def blog_file(folder: Path, bid: str, posts: list[str], industry: str = "Arts", age: int = 23) -> None:
    body = "".join(f"<date>1{i},May,2004</date>\n<post>\n\n  {p}\n</post>\n\n" for i, p in enumerate(posts))
    (folder / f"{bid}.male.{age}.{industry}.Leo.xml").write_bytes(f"<Blog>\n\n{body}</Blog>\n".encode("latin-1"))


def test_blog_posts_are_latin1_and_whitespace_collapsed(tmp_path):
    blog_file(tmp_path, "7", [words(150), "caf\xe9\xa0" + words(250), "x\n\t  " + words(400)])
    (tmp_path / "7.male.23.Arts.Leo.xml").write_bytes(
        (tmp_path / "7.male.23.Arts.Leo.xml").read_bytes().replace(b"caf\xe9", b"caf\xc3\xa9")
    )
    b = blogs.read_blogger(tmp_path / "7.male.23.Arts.Leo.xml")
    assert [p.words for p in b.posts] == [251, 401]  # the 150-word post does not count; U+00A0 splits
    assert b.posts[0].text.startswith("caf\xc3\xa9 w0") and b.posts[1].text.startswith("x w0")
    assert b.posts[0].date == "11,May,2004" and b.age == 23 and b.industry == "Arts"
    assert len(b.long) == 1


def test_blog_subset_takes_bloggers_with_long_posts_for_training(tmp_path, monkeypatch):
    monkeypatch.setattr(blogs, "SUBSET_TRAIN", 1)
    monkeypatch.setattr(blogs, "SUBSET_BACKGROUND", 1)
    for bid in ("91", "92", "93"):
        blog_file(tmp_path, bid, [words(700, f"s{bid}x{i}") for i in range(5)], industry="Banking")
    blog_file(tmp_path, "94", [words(250, f"short{i}") for i in range(2)], industry="Law")
    blog_file(tmp_path, "95", [words(250)])  # one counted post: never chosen
    bloggers = [blogs.read_blogger(p) for p in sorted(tmp_path.glob("*.xml"))]
    train, background = blogs.subset(bloggers)
    assert len(train) == 3 and len({r["authorIDs"][0] for r in train}) == 1  # 3 posts of one blogger
    assert all(len(r["fullText"].split()) == 700 and r["genre"] == "blog:Banking" for r in train)  # uncut
    assert len({r["authorIDs"][0] for r in background}) == 1 and "blogs:95" not in {
        r["authorIDs"][0] for r in background
    }
    assert list(train[0]) == ["documentID", "authorIDs", "fullText", "genre", "source"]
    assert [r["documentID"].rsplit("/", 1)[1] for r in train] == ["0", "1", "2"]
    assert (train, background) == blogs.subset(bloggers)  # seeded: the same every time


def test_blog_larger_pools_by_hash_with_caps_and_cut(tmp_path):
    fg = name_in("blogs-xl", 0.15, 0.30, "1")
    tr = name_in("blogs-xl", 0.30, 1.0, "2")
    res = name_in("blogs-xl", 0.0, 0.15, "3")
    bg = name_in("blogs-xl", 0.5, 1.0, "4")
    blog_file(tmp_path, fg, [words(700, f"f{i}") for i in range(12)])
    blog_file(tmp_path, tr, [words(360, f"t{i}") for i in range(6)])
    blog_file(tmp_path, res, [words(400, f"r{i}") for i in range(3)])
    blog_file(tmp_path, bg, [words(250, f"b{i}") for i in range(4)])
    blog_file(tmp_path, "5", [words(199)])  # no post counts: nowhere
    blog_file(tmp_path, "6", [words(400, f"x{i}") for i in range(3)])  # taken by the subset
    bloggers = [blogs.read_blogger(p) for p in sorted(tmp_path.glob("*.xml"), key=lambda p: p.name)]
    train_xl, xtopic = blogs.larger_pools(bloggers, {"6"})
    assert [r["role"] for r in xtopic] == ["foreground"] * 8 + ["background"] * 2  # foreground first, caps
    assert {r["authorIDs"][0] for r in xtopic} == {f"blogs:{fg}", f"blogs:{bg}"}
    assert all(len(r["fullText"].split()) == 600 for r in xtopic[:8])  # cut at 600 words
    assert [r["authorIDs"][0] for r in train_xl] == [f"blogs:{tr}"] * 4 and train_xl[0]["role"] == "train"
    assert f"blogs:{res}" not in {r["authorIDs"][0] for r in xtopic + train_xl}  # reserved
    r = xtopic[0]
    assert list(r) == [
        "documentID",
        "authorIDs",
        "fullText",
        "genre",
        "source",
        "industry",
        "date",
        "gender",
        "age",
        "role",
    ]
    assert r["genre"] == "blog" and r["age"] == 23 and r["gender"] == "male" and r["date"].endswith(",May,2004")


def test_blog_build_keeps_the_subset_out_of_the_larger_pools(tmp_path, monkeypatch):
    monkeypatch.setattr(blogs, "SUBSET_TRAIN", 2)
    monkeypatch.setattr(blogs, "SUBSET_BACKGROUND", 2)
    for i in range(10):
        blog_file(tmp_path, str(100 + i), [words(400 + 10 * i, f"p{i}x{j}") for j in range(3)])
    out = blogs.build(tmp_path)
    subset_ids = {r["authorIDs"][0] for r in out["blogs-train"] + out["blogs-background"]}
    pool_ids = {r["authorIDs"][0] for r in out["blogs-train-xl"] + out["blogs-xtopic"]}
    assert len(subset_ids) == 4 and not subset_ids & pool_ids


# ---------------------------------------------------------------- PAN


def write_pan(root: Path, texts: dict[str, str] | None = None, folder: str = pan.PAN19_FOLDER) -> Path:
    base = root / folder
    problems = [f"problem0000{i}" for i in range(1, 6)]
    info = [{"problem-name": p, "language": "en", "encoding": "UTF-8"} for p in problems]
    info.append({"problem-name": "problem00006", "language": "fr", "encoding": "UTF-8"})
    base.mkdir(parents=True)
    (base / "collection-info.json").write_text(json.dumps(info), encoding="utf-8")
    texts = texts or {}
    for p in problems:
        for cand in ("candidate00002", "candidate00001"):
            (base / p / cand).mkdir(parents=True)
            for k in ("known00002", "known00001"):
                (base / p / cand / f"{k}.txt").write_bytes(
                    texts.get(f"{p}/{cand}/{k}", f"{p} {cand} {k}\r\nline two\r").encode()
                )
        (base / p / "unknown").mkdir()
        for u in ("unknown00001", "unknown00002"):
            (base / p / "unknown" / f"{u}.txt").write_text(texts.get(f"{p}/unknown/{u}", f"{p} {u}"), encoding="utf-8")
        gt = [
            {"unknown-text": "unknown00002.txt", "true-author": "candidate00001"},
            {"unknown-text": "unknown00001.txt", "true-author": "<UNK>"},
        ]
        (base / p / "ground-truth.json").write_text(json.dumps({"ground_truth": gt}), encoding="utf-8")
        fandoms = [{"true-author": "candidate00001", "known-text": "known00001", "fandom": "fandom7"}]
        (base / p / "fandom-info.json").write_text(json.dumps(fandoms), encoding="utf-8")
    return root


def test_pan_records_order_ids_and_genres(tmp_path):
    folder = pan.SOURCES[0].locate(write_pan(tmp_path))
    recs = pan.build_pan19(folder)["pan19-en"]
    assert len(recs) == 5 * 6
    first = [r["documentID"] for r in recs[:6]]
    assert first == [
        "pan19/problem00001/candidate00001/known00001",
        "pan19/problem00001/candidate00001/known00002",
        "pan19/problem00001/candidate00002/known00001",
        "pan19/problem00001/candidate00002/known00002",
        "pan19/problem00001/unknown/unknown00002",
        "pan19/problem00001/unknown/unknown00001",
    ]
    assert [r["genre"] for r in recs[:6]] == ["fandom7"] + ["problem00001:known"] * 3 + [
        "problem00001:target-fandom"
    ] * 2
    assert recs[4]["authorIDs"] == ["pan19:problem00001/candidate00001"]
    assert recs[5]["authorIDs"] == ["pan19:problem00001/UNK-unknown00001"]
    assert recs[0]["fullText"] == "problem00001 candidate00001 known00001\nline two\n"  # universal newlines
    assert not any("problem00006" in r["documentID"] for r in recs) and recs[0]["source"] == "pan19-en"


def test_pan19_second_release_merges_near_copy_authors_and_drops_the_copy(tmp_path):
    story = words(300, "story")
    folder = pan.SOURCES[0].locate(
        write_pan(
            tmp_path,
            {"problem00002/candidate00002/known00001": story, "problem00004/unknown/unknown00002": story + " the end"},
        )
    )
    out = pan.build_pan19(folder)
    v1, v2 = out["pan19-en"], out["pan19-en.v2"]
    assert len(v2) == len(v1) - 1
    assert "pan19/problem00004/unknown/unknown00002" not in {r["documentID"] for r in v2}  # the larger id
    # problem00004/candidate00001 wrote the dropped copy: it is the same person as problem00002/candidate00002
    assert {tuple(r["authorIDs"]) for r in v2 if r["documentID"].startswith("pan19/problem00004/candidate00001")} == {
        ("pan19:problem00002/candidate00002",)
    }
    assert [r["documentID"] for r in v2] == [
        r["documentID"] for r in v1 if r["documentID"] != "pan19/problem00004/unknown/unknown00002"
    ]


def test_enron_files_in_order_stripped(tmp_path):
    for who in ("b-sender", "a-sender"):
        (tmp_path / who).mkdir()
        (tmp_path / who / "2.txt").write_bytes(b"  second\r\nbad \xff byte\n\n")
        (tmp_path / who / "1.txt").write_bytes(b"first")
    recs = enron.build(tmp_path)["enron"]
    assert [r["documentID"] for r in recs] == [
        "enron/a-sender/1.txt",
        "enron/a-sender/2.txt",
        "enron/b-sender/1.txt",
        "enron/b-sender/2.txt",
    ]
    assert recs[1]["fullText"] == "second\nbad \ufffd byte" and recs[0]["authorIDs"] == ["enron:a-sender"]


# ---------------------------------------------------------------- the command: checks, bad input, writes


def test_a_build_that_differs_from_the_published_file_writes_nothing(tmp_path, capsys):
    bg = name_in("reddit-college", 0.5, 1.0, "bg")
    dat = write_dat(tmp_path / "src", {"College": [thread("s1", bg, 10, "T", words(400))]})
    out = tmp_path / "out"
    rc, _, err = run_cli(capsys, "data", "build", "reddit-xsub", "--source", dat, "--out", out)
    line = one_line_error(rc, err)
    expected = reddit.SOURCES[0].outputs["reddit-xsub"].sha256
    assert "reddit-xsub.jsonl.gz: built sha256 " in line and f"expected {expected}" in line
    assert "nothing written" in line and not out.exists()


@pytest.mark.parametrize(
    "name, make, expect",
    [
        ("reddit-xsub", lambda d: (d / "College").mkdir(parents=True), "missing ApplyingToCollege, AskAcademia"),
        ("blogs-xtopic", lambda d: blog_file(d, "1", ["x"]), "1 blog files, expected the corpus's 19,320"),
        ("blogs-xtopic", lambda d: (d / "a.txt").write_text("x"), "expected 19,320 files <id>.<gender>.<age>"),
        ("pan19-en.v2", lambda d: (d / "x").mkdir(), "expected collection-info.json"),
        (
            "pan19-en.v2",
            lambda d: (d / "collection-info.json").write_text('[{"problem-name": "p1"}]'),
            "expected field 'language'",
        ),
        (
            "pan18-en",
            lambda d: write_pan(d, folder=pan.PAN18_FOLDER),
            "not the PAN 2018 cross-domain attribution "
            "training set: expected English problems problem00001, problem00002, found problem00001, problem00002, problem00003",
        ),
        ("enron", lambda d: (d / "alice").mkdir() or (d / "alice" / "1.txt").write_text("x"), "1 sender folders"),
    ],
)
def test_a_source_that_is_not_the_distribution_is_one_line(tmp_path, capsys, name, make, expect):
    src = tmp_path / "src"
    src.mkdir()
    make(src)
    before = snapshot(tmp_path)
    rc, _, err = run_cli(capsys, "data", "build", name, "--source", src, "--out", tmp_path / "out")
    assert expect in one_line_error(rc, err)
    assert snapshot(tmp_path) == before


def test_pan_problem_missing_its_ground_truth_names_the_file(tmp_path, capsys):
    write_pan(tmp_path)
    (tmp_path / pan.PAN19_FOLDER / "problem00003" / "ground-truth.json").unlink()
    rc, _, err = run_cli(capsys, "data", "build", "pan19", "--source", tmp_path, "--out", tmp_path / "out")
    assert "problem00003/ground-truth.json: missing" in one_line_error(rc, err)


def test_names_unknown_or_from_two_sources(tmp_path, capsys):
    rc, _, err = run_cli(capsys, "data", "build", "reddit-xsb", "--source", tmp_path)
    assert "did you mean reddit-xsub" in one_line_error(rc, err)
    rc, _, err = run_cli(capsys, "data", "build", "reddit-xsub", "blogs-xtopic", "--source", tmp_path)
    assert "come from different sources" in one_line_error(rc, err)


def test_a_matching_build_is_written_atomically_and_rerun_leaves_it(tmp_path, capsys, monkeypatch):
    """With the expected hashes those of the fixture, the file is written (no temporary left) and a rerun
    finds the same bytes."""
    bg = name_in("reddit-college", 0.5, 1.0, "bg")
    dat = write_dat(tmp_path / "src", {"College": [thread("s1", bg, 10, "T", words(400))]})
    real = reddit.SOURCES[0]
    recs = real.build(dat)
    fixed = {
        stem: dataclasses.replace(
            exp,
            sha256=canonical.sha256(
                canonical.gzip_bytes(canonical.jsonl_bytes(recs[stem]), exp.gzip_fname, exp.gzip_mtime)
            ),
        )
        for stem, exp in real.outputs.items()
    }
    monkeypatch.setattr(builders, "sources", lambda: {real.name: dataclasses.replace(real, outputs=fixed)})
    out = tmp_path / "out"
    rc, stdout, err = run_cli(capsys, "data", "build", "reddit-college", "--source", tmp_path / "src", "--out", out)
    assert rc == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["reddit-train.jsonl.gz", "reddit-xsub.jsonl.gz"]
    assert canonical.sha256((out / "reddit-xsub.jsonl.gz").read_bytes()) == fixed["reddit-xsub"].sha256
    assert "wrote" in stdout and "1 docs, 1 authors" in stdout
    rc, stdout, _ = run_cli(capsys, "data", "build", "reddit-xsub", "--source", dat, "--out", out)
    assert rc == 0 and "already there, same bytes" in stdout


def test_collections_names_the_command_that_builds_a_missing_file(tmp_path, capsys):
    rc, out, _ = run_cli(capsys, "collections", "--data-dir", tmp_path)
    assert rc == 0
    out = " ".join(out.split())  # the hints below the table are wrapped to the terminal
    assert f"aa-harness data build reddit-xsub --source DIR --out {tmp_path}" in out
    assert "aa-harness data build pan19-en.v2 --source DIR" in out


def test_data_build_help_lists_every_buildable_file(capsys):
    with pytest.raises(SystemExit):
        run_cli(capsys, "data", "build", "--help")
    out = capsys.readouterr().out
    for src in builders.sources().values():
        assert src.name in out and all(stem in out for stem in src.outputs)


# ---------------------------------------------------------------- the real distributions


def raw_source(name: str) -> Path:
    root = os.environ.get(RAW_ENV)
    if not root or not (Path(root) / name).exists():
        pytest.skip(f"${RAW_ENV}/{name} not found (the public distribution, see the data docs)")
    return Path(root) / name


@pytest.mark.slow
@pytest.mark.parametrize("source", ["reddit-college", "blog-authorship", "pan19", "pan18", "enron-jstylo"])
def test_a_real_build_reproduces_the_published_files(tmp_path, source):
    src = builders.sources()[source]
    built = builders.build_files([source], raw_source(source), tmp_path)
    for b in built:
        assert canonical.sha256(b.path.read_bytes()) == src.outputs[b.stem].sha256, b.stem
        assert (b.docs, b.authors) == (src.outputs[b.stem].docs, src.outputs[b.stem].authors)


def test_data_errors_are_harness_errors():
    with pytest.raises(DataError):
        reddit.locate(Path("/nonexistent-folder"))
