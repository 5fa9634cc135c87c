"""The training table and loss plot, generated from the training folder the leaderboard's record names:
<name>.train_log.json (written by `aa-harness train`) and, when kept beside it, <name>.train_config.json."""

from __future__ import annotations

from pathlib import Path


def load_logs(folder: Path) -> dict[str, dict]:
    from harness.data.jsonl import read_json
    from harness.errors import DataError

    logs = {}
    for path in sorted(Path(folder).glob("*.train_log.json")):
        name = path.name[: -len(".train_log.json")]
        log = read_json(path, "training log")
        if (
            not isinstance(log, dict)
            or not isinstance(log.get("log", []), list)
            or not all(
                isinstance(e, dict) and (e.get("loss") is None or isinstance(e["loss"], (int, float)))
                for e in log.get("log", [])
            )
        ):
            raise DataError(
                f"{path}: a training log must be a JSON object whose 'log' is a list of objects (each loss a number)"
            )
        cfg_path = path.with_name(f"{name}.train_config.json")
        log["train_config"] = read_json(cfg_path, "training config") if cfg_path.is_file() else None
        if log["train_config"] is not None and not isinstance(log["train_config"], dict):
            raise DataError(f"{cfg_path}: a training config must be a JSON object")
        logs[name] = log
    return logs


def log_marks(logs: dict[str, dict], fixes: list) -> dict[str, list]:
    """run name -> fixes its training code predates (commit and time from <name>.train_config.json)."""
    from harness.reports.fixes import marks_for

    out = {}
    for name, log in logs.items():
        cfg = log["train_config"] or {}
        prov = cfg.get("provenance", {})
        found = marks_for(
            fixes,
            cfg.get("system", log.get("system")),
            trained=True,
            commit=prov.get("git_commit"),
            when=prov.get("finished_at"),
        )
        if found:
            out[name] = found
    return out


def examples(log: dict) -> str:
    """How many training examples and of what: "3733 authors", "1976 queries". Logs written before the
    unit was recorded counted the reranker's queries under "authors"."""
    if "examples" in log:
        return f"{log['examples']} {log['unit']}"
    return f"{log['authors']} {'queries' if 'strategy' in log else 'authors'}"


def trained_on(log: dict, before: dict[str, str]) -> str:
    """What a log trained on: its examples, and the training set by sha256 prefix from its model card,
    said when that set predates the corpora's decontamination (`before`: prefix -> why)."""
    data = (log.get("card") or {}).get("training_data") or {}
    sha = str(data.get("sha256", ""))
    if not sha:
        return examples(log)
    stale = any(sha.startswith(prefix) for prefix in before)
    return f"{examples(log)} of {sha[:12]}" + (" (before decontamination)" if stale else "")


def training_table(
    logs: dict[str, dict], marks: dict[str, list] | None = None, before: dict[str, str] | None = None
) -> str:
    """marks: run name -> fixes (harness.reports.fixes) its code predates, shown after the name.
    before: training-set sha256 prefix -> why it predates decontamination (run_identity's record)."""
    from harness.foundation.markdown_table import markdown_table
    from harness.reports.fixes import label

    rows = []
    for name, log in logs.items():
        epochs = [e for e in log["log"] if "epoch_seconds" in e]
        losses = [e["loss"] for e in log["log"] if "loss" in e]
        cfg = log["train_config"] or log  # train_job also stores system and config in the log itself
        system = cfg.get("system", "not recorded")
        backbone = cfg.get("config", {}).get("backbone", "not recorded")
        r = log["recipe"]
        if "strategy" in log:  # a reranker: queries (1 + m pairs each) a batch
            per = r.get("queries_per_batch", 1)
            batch = "one query/batch" if per == 1 else f"{per} queries/batch"
            recipe = (
                f"lr {r['lr']:g}, {batch}, grad accumulation {r['grad_accumulation']}, {r['epochs']} ep, "
                f"tau {r['tau']:g}, negatives {log['strategy']} (m={r['negatives']})"
            )
        else:
            recipe = f"lr {r['lr']:g}, {r['authors_per_batch']} authors/batch, {r['epochs']} ep, tau {r['tau']:g}" + (
                ", hard negatives" if r["hard_negatives"] else ""
            )
            if r.get("grad_accumulation", 1) > 1:
                recipe += f", grad accumulation {r['grad_accumulation']}"
            if r.get("similarity") not in (None, "dot"):  # the SADIRI-v2 retriever's named variants
                recipe += f", {r['similarity']} similarity"
            if r.get("projection_init") not in (None, "default"):
                recipe += f", {r['projection_init']} projection init"
        rates = [e["docs_per_second"] for e in epochs if "docs_per_second" in e]
        rows.append(
            [
                label(name, (marks or {}).get(name, [])),
                system,
                backbone,
                recipe,
                log["device"],
                log["world_size"],
                trained_on(log, before or {}),
                log["steps"],
                f"{sum(e['epoch_seconds'] for e in epochs):.1f}",
                f"{sum(rates) / len(rates):.0f}" if rates else "",
                f"{losses[0]:.2f}" if losses else "",
                f"{losses[-1]:.2f}" if losses else "",
            ]
        )
    return markdown_table(
        rows,
        headers=[
            "run",
            "system",
            "backbone",
            "recipe",
            "device",
            "GPUs",
            "trained on",
            "steps",
            "train seconds",
            "docs/s (mean over epochs)",
            "first loss",
            "last loss",
        ],
        disable_numparse=True,
    )


def card_lines(logs: dict[str, dict]) -> str:
    """What produced each model, from the card `aa-harness train` keeps in the log ("" when no log has one)."""
    lines = []
    for name, log in logs.items():
        card = log.get("card")
        if not card:
            continue
        data, batch = card["training_data"], card["global_batch"]
        lines.append(
            f"- {name}: {card['system']} at commit {str(card['commit'])[:12]}, training data sha256 "
            f"{data['sha256'][:16]}… ({data['documents']} documents, {data['authors']} authors; "
            f"{100 * card['author_fraction']:.0f}% used), seed {card['seed']}, global batch {batch['per_batch']} "
            f"{batch['unit']} × {batch['grad_accumulation']}, {card['steps']} steps, final loss "
            f"{card['final_loss']}, {card['device']} x{card['world_size']}"
        )
    return ("\n\nModel cards (`aa_model.json`):\n\n" + "\n".join(lines)) if lines else ""


def loss_panels(logs: dict[str, dict], cap: int = 8) -> list[tuple[str, list[str]]]:
    """(title, log names) per panel, at most `cap` logs a panel: small systems share a panel, a
    system with more logs than fit is split over several."""
    by_system: dict[str, list[str]] = {}
    for name, log in logs.items():
        system = log.get("system") or (log.get("train_config") or {}).get("system") or "system not recorded"
        by_system.setdefault(system, []).append(name)
    groups: list[tuple[str, list[str]]] = []
    for system, names in sorted(by_system.items()):
        chunks = [sorted(names)[i : i + cap] for i in range(0, len(names), cap)]
        groups += [
            (system + (f" ({i} of {len(chunks)})" if len(chunks) > 1 else ""), c) for i, c in enumerate(chunks, 1)
        ]
    panels: list[tuple[list[str], list[str]]] = []
    for label, names in groups:
        if panels and len(panels[-1][1]) + len(names) <= cap:
            panels[-1][0].append(label)
            panels[-1][1].extend(names)
        else:
            panels.append(([label], list(names)))
    return [(f"Contrastive training loss per step: {', '.join(labels)}", names) for labels, names in panels]


def plot_losses(logs: dict[str, dict], path: Path) -> list[dict]:
    """Training loss per step, one panel per system (at most 8 curves a panel, a colour and marker each,
    the legend outside on the right). Returns per panel its title, curves and legend placement (for tests)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    import numpy as np

    from harness.reports.plots import COLOURS, LEGEND_WIDTH_IN, MARKERS, save_png

    panels = loss_panels(logs)
    fig, axes = plt.subplots(len(panels), 1, figsize=(8.5 + LEGEND_WIDTH_IN, 3.6 * len(panels)), dpi=100, squeeze=False)
    drawn = []
    for ax, (title, names) in zip(axes[:, 0], panels):
        curves = {name: [e["loss"] for e in logs[name]["log"] if "loss" in e] for name in names}
        longest = max((len(v) for v in curves.values()), default=1)
        window = max(1, round(longest / 40))  # per-step losses of small batches are noisy: a rolling mean
        styles, shown = [], []
        for i, name in enumerate(names):
            losses = np.asarray(curves[name], dtype=float)
            w = min(window, len(losses)) or 1
            smooth = np.convolve(losses, np.ones(w) / w, mode="valid") if len(losses) else losses
            colour, marker = COLOURS[i % len(COLOURS)], MARKERS[i % len(MARKERS)]
            ax.plot(
                np.arange(w, len(losses) + 1),
                smooth,
                color=colour,
                marker=marker,
                linewidth=1.4,
                markersize=5,
                markevery=max(1, len(smooth) // 8),
                label=name,
            )
            styles.append((colour, marker))
            shown.append(smooth)
        values = np.concatenate([v for v in shown if len(v)] or [np.ones(1)])
        if values.min() > 0 and values.max() / values.min() > 10:  # log only where the losses span a decade
            ax.set_yscale("log")
            ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda y, _: f"{y:g}"))
            ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        scale = "log scale, " if ax.get_yscale() == "log" else ""
        ax.set_xlabel("step")
        ax.set_ylabel(f"training loss ({scale}mean of {window} step{'s' * (window > 1)})")
        ax.set_title(title, fontsize=11, loc="left")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8.5, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, frameon=False)
        drawn.append({"title": title, "names": names, "styles": styles, "window": window})
    fig.tight_layout()  # makes room for the legends outside the axes too
    fig.canvas.draw()
    for ax, d in zip(axes[:, 0], drawn):
        d["legend_outside"] = bool(ax.get_legend().get_window_extent().x0 >= ax.get_window_extent().x1)
    save_png(fig, path)
    plt.close(fig)
    return drawn
