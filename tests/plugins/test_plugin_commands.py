"""Plugins add command-line verbs through the `register_commands` hook; the bench distribution
adds `aa-harness bench` this way, and the product alone has no such verb."""

from __future__ import annotations

import argparse
import sys

import pytest

from harness.cli import build_parser, main
from harness.hookspecs import hookimpl
from harness.plugins import add_plugin_commands, plugin_manager
from tests.conftest import install_bench_entry_point


class Hello:
    @hookimpl
    def register_commands(self, subparsers):
        sp = subparsers.add_parser("hello", help="say hello")
        sp.add_argument("--name", default="world")
        sp.set_defaults(fn=lambda args: print(f"hello {args.name}") or 0)


class Broken:
    @hookimpl
    def register_commands(self, subparsers):
        subparsers.add_parser("half-added", help="added before the plugin fails")
        raise RuntimeError("boom")


class TakesRun:
    @hookimpl
    def register_commands(self, subparsers):
        subparsers.add_parser("run", help="a plugin's run")


def _parser():
    p = argparse.ArgumentParser(prog="aa-harness")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("run", help="the built-in run").set_defaults(fn=lambda args: 7)
    return p, sub


def test_a_plugin_adds_a_verb_that_parses_and_runs(capsys):
    p, sub = _parser()
    added = add_plugin_commands(sub, plugin_manager(entrypoints=False, extra=(Hello(),)))
    assert added == ["hello"]
    args = p.parse_args(["hello", "--name", "aa"])
    assert args.fn(args) == 0 and capsys.readouterr().out == "hello aa\n"
    assert "say hello" in p.format_help()


@pytest.mark.skipif(sys.version_info < (3, 11), reason="argparse refuses a taken verb from 3.11 on")
@pytest.mark.parametrize("bad", [Broken, TakesRun])
def test_a_broken_plugin_is_left_out_whole_and_the_others_work(bad):
    p, sub = _parser()
    warnings = []
    added = add_plugin_commands(sub, plugin_manager(entrypoints=False, extra=(bad(), Hello())), warn=warnings.append)
    assert added == ["hello"]
    assert len(warnings) == 1 and "failed while adding commands" in warnings[0] and bad.__name__ in warnings[0]
    assert set(sub.choices) == {"run", "hello"}  # nothing of the failed plugin is kept, not even in the help
    assert "half-added" not in p.format_help()
    args = p.parse_args(["run"])
    assert args.fn(args) == 7  # the built-in verb is untouched


def test_bench_verb_comes_from_the_bench_distribution(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("AA_HARNESS_DISABLE_PLUGIN_AUTOLOAD", "1")
    with pytest.raises(SystemExit) as e:  # the product alone has no bench verb
        build_parser().parse_args(["bench", "--help"])
    assert e.value.code == 2 and "invalid choice: 'bench'" in capsys.readouterr().err
    install_bench_entry_point(tmp_path, monkeypatch)
    with pytest.raises(SystemExit) as e:
        main(["bench", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: aa-harness bench [-h] KIND ...")
    for kind in ("encode", "rerank", "train", "batching", "search"):
        assert f"\n    {kind} " in out
    with pytest.raises(SystemExit):
        main(["bench", "train", "--help"])
    assert "--random-weights" in capsys.readouterr().out


def test_bench_without_random_weights_is_one_line(bench_installed, capsys):
    assert main(["bench", "encode", "--no-save"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "aa-harness: error: bench builds architectures with random weights only: pass --random-weights "
        "(or --backbone REF for real weights)\n"
    )
