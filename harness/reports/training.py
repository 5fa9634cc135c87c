"""The training table and loss plot, generated from leaderboards/training/<name>.train_log.json
(written by `aa-harness train`) and, when kept beside it, <name>.train_config.json."""
from __future__ import annotations

import json
from pathlib import Path

from harness.atomic import atomic_open


def load_logs(folder: Path) -> dict[str, dict]:
    logs = {}
    for path in sorted(Path(folder).glob("*.train_log.json")):
        name = path.name[: -len(".train_log.json")]
        log = json.loads(path.read_text(encoding="utf-8"))
        cfg_path = path.with_name(f"{name}.train_config.json")
        log["train_config"] = json.loads(cfg_path.read_text(encoding="utf-8")) if cfg_path.is_file() else None
        logs[name] = log
    return logs


def log_marks(logs: dict[str, dict], fixes: list) -> dict[str, list]:
    """run name -> fixes its training code predates (commit and time from <name>.train_config.json)."""
    from harness.reports.fixes import marks_for

    out = {}
    for name, log in logs.items():
        cfg = log["train_config"] or {}
        prov = cfg.get("provenance", {})
        found = marks_for(fixes, cfg.get("system", log.get("system")), trained=True, commit=prov.get("git_commit"),
                          when=prov.get("finished_at"))
        if found:
            out[name] = found
    return out


def examples(log: dict) -> str:
    """How many training examples and of what: "3733 authors", "1976 queries". Logs written before the
    unit was recorded counted the reranker's queries under "authors"."""
    if "examples" in log:
        return f"{log['examples']} {log['unit']}"
    return f"{log['authors']} {'queries' if 'strategy' in log else 'authors'}"


def training_table(logs: dict[str, dict], marks: dict[str, list] | None = None) -> str:
    """marks: run name -> fixes (harness.reports.fixes) its code predates, shown after the name."""
    from tabulate import tabulate

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
            recipe = (f"lr {r['lr']:g}, {batch}, grad accumulation {r['grad_accumulation']}, {r['epochs']} ep, "
                      f"tau {r['tau']:g}, negatives {log['strategy']} (m={r['negatives']})")
        else:
            recipe = f"lr {r['lr']:g}, {r['authors_per_batch']} authors/batch, {r['epochs']} ep, tau {r['tau']:g}" + \
                     (", hard negatives" if r["hard_negatives"] else "")
            if r.get("grad_accumulation", 1) > 1:
                recipe += f", grad accumulation {r['grad_accumulation']}"
            if r.get("similarity") not in (None, "dot"):  # the SADIRI-v2 retriever's named variants
                recipe += f", {r['similarity']} similarity"
            if r.get("projection_init") not in (None, "default"):
                recipe += f", {r['projection_init']} projection init"
        rates = [e["docs_per_second"] for e in epochs if "docs_per_second" in e]
        rows.append([label(name, (marks or {}).get(name, [])), system, backbone, recipe, log["device"], log["world_size"], examples(log), log["steps"],
                     f"{sum(e['epoch_seconds'] for e in epochs):.1f}",
                     f"{sum(rates) / len(rates):.0f}" if rates else "",
                     f"{losses[0]:.2f}" if losses else "", f"{losses[-1]:.2f}" if losses else ""])
    return tabulate(rows, headers=["run", "system", "backbone", "recipe", "device", "GPUs", "trained on", "steps",
                                   "train seconds", "docs/s (mean over epochs)", "first loss", "last loss"],
                    tablefmt="github", disable_numparse=True)


def card_lines(logs: dict[str, dict]) -> str:
    """What produced each model, from the card `aa-harness train` keeps in the log ("" when no log has one)."""
    lines = []
    for name, log in logs.items():
        card = log.get("card")
        if not card:
            continue
        data, batch = card["training_data"], card["global_batch"]
        lines.append(f"- {name}: {card['system']} at commit {str(card['commit'])[:12]}, training data sha256 "
                     f"{data['sha256'][:16]}… ({data['documents']} documents, {data['authors']} authors; "
                     f"{100 * card['author_fraction']:.0f}% used), seed {card['seed']}, global batch {batch['per_batch']} "
                     f"{batch['unit']} × {batch['grad_accumulation']}, {card['steps']} steps, final loss "
                     f"{card['final_loss']}, {card['device']} x{card['world_size']}")
    return ("\n\nModel cards (`aa_model.json`):\n\n" + "\n".join(lines)) if lines else ""


def plot_losses(logs: dict[str, dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    for name, log in logs.items():
        losses = [e["loss"] for e in log["log"] if "loss" in e]
        ax.plot(range(1, len(losses) + 1), losses, label=name)
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (log scale)")
    ax.set_title("Contrastive training loss per step")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    with atomic_open(path, "wb") as f:
        fig.savefig(f, format="png", metadata={"Software": None})
    plt.close(fig)
