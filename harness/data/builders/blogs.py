"""blogs-train, blogs-background, blogs-train-xl and blogs-xtopic from the Blog Authorship Corpus.

The distribution: 19,320 files `<id>.<gender>.<age>.<industry>.<sign>.xml`, one per blogger, each
a `<Blog>` of `<date>…</date> <post>…</post>` pairs. The files are not well-formed XML (raw `&`,
bytes in several encodings), so they are read as Latin-1 (every byte kept as one code point: UTF-8
sequences stay as mojibake, as in the published files) and the pairs found by pattern.

Rules (words: whitespace-separated, Unicode whitespace, so U+00A0 counts):

1. Posts: every `<date>D</date>` followed (after whitespace) by `<post>P</post>`; a post counts
   with 200 or more words, is "long" with 350 or more. Bloggers are read in sorted file-name
   order.
2. The subset (blogs-train, blogs-background): the bloggers with two or more counted posts are
   shuffled with random.Random(13). In that order a blogger with two or more long posts goes to
   training while it has fewer than 2,500 bloggers; any other goes to background while that has
   fewer than 1,200; the rest are not used. The blogger's long posts (training) or counted posts
   (background), in file order, are shuffled with the same random.Random(13) and the first 3
   kept, whole (words joined by single spaces). Genre "blog:<industry>".
3. The larger pools (blogs-train-xl, blogs-xtopic), from every blogger not taken by the subset
   (training bloggers before decontamination, and background ones): counted posts are cut at
   600 words. u = sha256("blogs-xl:<id>") bucket, rng = random.Random(<id>).
   - 2 to 50 long posts: shuffled with rng; u < 0.15 reserved (not built); u < 0.30 evaluation
     foreground (first 8, role "foreground", blogs-xtopic); else training (first 4, role
     "train", blogs-train-xl).
   - otherwise, with a counted post and at most 50 long posts: counted posts shuffled with rng;
     u < 0.5 reserved; else background (first 2, role "background", blogs-xtopic).
   blogs-xtopic holds every foreground record, then every background record. Genre "blog",
   with industry, date (the <date> text, stripped), gender, age (a number) and role.
4. Records: documentID "blogs/<id>/<i>" (i: position among the blogger's kept posts), authorIDs
   ["blogs:<id>"], fullText, genre, source "blogs" (and rule 3's fields).
5. blogs-train and blogs-train-xl then lose the authors decontamination removed.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

from harness.data.builders import CorpusSource
from harness.data.builders.canonical import Expected
from harness.data.builders.rules import bucket, decontaminate
from harness.errors import DataError

FILES = 19320
POST = re.compile(r"<date>(.*?)</date>\s*<post>(.*?)</post>", re.S)
MIN_WORDS, LONG_WORDS, CUT_WORDS = 200, 350, 600
SUBSET_SEED, SUBSET_TRAIN, SUBSET_BACKGROUND, SUBSET_POSTS = 13, 2500, 1200, 3
SALT = "blogs-xl"
MAX_LONG = 50
RESERVED_MULTI, FOREGROUND_MULTI, RESERVED_SINGLE = 0.15, 0.30, 0.5
FOREGROUND_CAP, TRAIN_CAP, BACKGROUND_CAP = 8, 4, 2


@dataclass(frozen=True)
class Post:
    date: str
    text: str  # its words joined by single spaces
    words: int

    def cut(self, n: int) -> str:
        return self.text if self.words <= n else " ".join(self.text.split(" ")[:n])


@dataclass(frozen=True)
class Blogger:
    id: str
    gender: str
    age: int
    industry: str
    posts: tuple[Post, ...]  # each counted post, in file order

    @property
    def long(self) -> list[Post]:
        return [p for p in self.posts if p.words >= LONG_WORDS]


def locate(folder: Path) -> Path:
    """The folder of blogger files: `folder` itself or its `blogs/` (a checkout of a mirror)."""
    for cand in (folder, folder / "blogs"):
        if cand.is_dir() and any(cand.glob("*.xml")):
            found = sum(1 for _ in cand.glob("*.xml"))
            if found != FILES:
                raise DataError(
                    f"{cand}: {found} blog files, expected the corpus's {FILES:,} "
                    "(<id>.<gender>.<age>.<industry>.<sign>.xml)"
                )
            return cand
    if not folder.is_dir():
        raise DataError(f"{folder}: no such folder (expected the Blog Authorship Corpus's blogs/ folder)")
    raise DataError(
        f"{folder}: not the Blog Authorship Corpus: expected {FILES:,} files <id>.<gender>.<age>.<industry>.<sign>.xml"
    )


def read_blogger(path: Path) -> Blogger:
    fields = path.name[: -len(".xml")].split(".")
    if len(fields) != 5 or not fields[2].isdigit():
        raise DataError(f"{path}: expected a file name <id>.<gender>.<age>.<industry>.<sign>.xml")
    bid, gender, age, industry, _sign = fields
    text = path.read_bytes().decode("latin-1")
    posts = []
    for date, post in POST.findall(text):
        words = post.split()
        if len(words) >= MIN_WORDS:
            posts.append(Post(date.strip(), " ".join(words), len(words)))
    return Blogger(bid, gender, int(age), industry, tuple(posts))


def subset_record(b: Blogger, i: int, post: Post) -> dict:
    return {
        "documentID": f"blogs/{b.id}/{i}",
        "authorIDs": [f"blogs:{b.id}"],
        "fullText": post.text,
        "genre": f"blog:{b.industry}",
        "source": "blogs",
    }


def subset(bloggers: list[Blogger]) -> tuple[list[dict], list[dict]]:
    """(blogs-train before decontamination, blogs-background), by rule 2."""
    rng = random.Random(SUBSET_SEED)
    order = [b for b in bloggers if len(b.posts) >= 2]
    rng.shuffle(order)
    train: list[dict] = []
    background: list[dict] = []
    n_train = n_background = 0
    for b in order:
        long_posts = b.long
        if n_train < SUBSET_TRAIN and len(long_posts) >= 2:
            dst, pool = train, long_posts
            n_train += 1
        elif n_background < SUBSET_BACKGROUND:
            dst, pool = background, list(b.posts)
            n_background += 1
        else:
            continue
        rng.shuffle(pool)
        dst += [subset_record(b, i, post) for i, post in enumerate(pool[:SUBSET_POSTS])]
    return train, background


def pool_records(b: Blogger, posts: list[Post], role: str) -> list[dict]:
    return [
        {
            "documentID": f"blogs/{b.id}/{i}",
            "authorIDs": [f"blogs:{b.id}"],
            "fullText": post.cut(CUT_WORDS),
            "genre": "blog",
            "source": "blogs",
            "industry": b.industry,
            "date": post.date,
            "gender": b.gender,
            "age": b.age,
            "role": role,
        }
        for i, post in enumerate(posts)
    ]


def larger_pools(bloggers: list[Blogger], taken: set[str]) -> tuple[list[dict], list[dict]]:
    """(blogs-train-xl before decontamination, blogs-xtopic), by rule 3."""
    train: list[dict] = []
    foreground: list[dict] = []
    background: list[dict] = []
    for b in bloggers:
        if b.id in taken:
            continue
        u, rng = bucket(SALT, b.id), random.Random(b.id)
        long_posts = b.long
        if 2 <= len(long_posts) <= MAX_LONG:
            rng.shuffle(long_posts)
            if u < RESERVED_MULTI:
                continue
            if u < FOREGROUND_MULTI:
                foreground += pool_records(b, long_posts[:FOREGROUND_CAP], "foreground")
            else:
                train += pool_records(b, long_posts[:TRAIN_CAP], "train")
        elif b.posts and len(long_posts) <= MAX_LONG:
            posts = list(b.posts)
            rng.shuffle(posts)
            if u < RESERVED_SINGLE:
                continue
            background += pool_records(b, posts[:BACKGROUND_CAP], "background")
    return train, foreground + background


def build(folder: Path) -> dict[str, list[dict]]:
    bloggers = [read_blogger(p) for p in sorted(folder.glob("*.xml"), key=lambda p: p.name)]
    train, background = subset(bloggers)
    taken = {r["authorIDs"][0].split(":", 1)[1] for r in train + background}
    train_xl, xtopic = larger_pools(bloggers, taken)
    return {
        "blogs-train": decontaminate("blogs-train", train),
        "blogs-background": background,
        "blogs-train-xl": decontaminate("blogs-train-xl", train_xl),
        "blogs-xtopic": xtopic,
    }


SOURCES = (
    CorpusSource(
        name="blog-authorship",
        title="Blog Authorship Corpus",
        publisher="Bar-Ilan University (M. Koppel), u.cs.biu.ac.il/~koppel/BlogCorpus.htm",
        licence='as stated by the publisher: "The corpus may be freely used for non-commercial research purposes."',
        revision="muhwagua/color-bert @ 8db0aa36e484494531f03bca15e8cc280020b9ff, folder blogs/",
        layout=f"{FILES:,} files <id>.<gender>.<age>.<industry>.<sign>.xml",
        outputs={
            "blogs-xtopic": Expected(
                "5bc5d9943cdad38fcaaf8d88bcf28cdc96596a7150db0e9d90d66cd047755e1c",
                "2d70629252eda2b491d3d50d6a0ef51788220ac483ffac2edeaeb6109652b9fa",
                "blogs-xtopic.jsonl",
                1795674427,
                docs=10421,
                authors=4531,
            ),
            "blogs-background": Expected(
                "20cc7643b80e0ea6cf2af33190f89b0de310ade584ccc60ccb3deff019555e9e",
                "89782d7586e0cda0f3d326c8e9c6a50ad13944ee5d8031824d95707d1f95e6ed",
                "blogs-background.jsonl",
                1795653162,
                docs=3106,
                authors=1200,
            ),
            "blogs-train": Expected(
                "861db135598495165cc80c33d10781a626fbb3ca0ebdc829161cbaafa08537c5",
                "24b88cf108119a51a7eea93796763357cd5d529e5eb4c9f26793815204fc7140",
                "blogs-train.jsonl.gz.tmp",
                1795710446,
                docs=6662,
                authors=2412,
            ),
            "blogs-train-xl": Expected(
                "39f2f659a5091dfc4f173be146a2350156b4006d06a8833f72bfe8e4eeac2d46",
                "1b3858c17c6017149be167ec11fff85093c1aa74aa4cb745a371759cba678493",
                "blogs-train-xl.jsonl.gz.tmp",
                1795710587,
                docs=15082,
                authors=4494,
            ),
        },
        locate=locate,
        build=build,
    ),
)
