"""A training run's logs: one JSON line per step (``log.jsonl``), the same scalars to TensorBoard
(``tb/``, when the ``tensorboard`` package is installed) and a learning-curve plot read back from the JSONL."""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)
CURVE_KEYS = ("reward", "score_changed", "keep_all", "mean_entries_after", "entropy", "valid_call_rate")


class RunLog:
    """Appends step records to ``out/log.jsonl`` (a resumed run continues the file) and TensorBoard."""

    def __init__(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.path = out / "log.jsonl"
        self._file = self.path.open("a")
        self._tb = None
        try:
            from torch.utils.tensorboard import SummaryWriter

            self._tb = SummaryWriter(str(out / "tb"))
        except ImportError:  # tensorboard is optional: the JSONL holds everything
            log.info("tensorboard is not installed; logging to %s only", self.path)

    def write(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()
        if self._tb is not None:
            step = int(record["step"])
            for key, value in record.items():
                if isinstance(value, (int, float)) and key != "step":
                    self._tb.add_scalar(f"train/{key}", value, step)
            for group in ("seconds", "tool_mix", "kept_labels", "dropped_labels", "group_ops"):
                for key, value in record.get(group, {}).items():
                    self._tb.add_scalar(f"{group}/{key}", value, step)

    def close(self) -> None:
        self._file.close()
        if self._tb is not None:
            self._tb.close()


def read_log(path: Path) -> list[dict[str, Any]]:
    """The step records, the last one per step winning (a resumed run may repeat steps after a crash)."""
    records: dict[int, dict[str, Any]] = {}
    for line in Path(path).read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            records[int(record["step"])] = record
    return [records[k] for k in sorted(records)]


def plot_curve(log_path: Path, out: Path, window: int = 5, title: str = "GRPO") -> Path:
    """The learning curve: per-step values (dots) and their running mean over ``window`` steps (line)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    records = read_log(log_path)
    steps = [r["step"] for r in records]
    keys = [k for k in CURVE_KEYS if all(k in r for r in records)]
    fig, axes = plt.subplots(len(keys), 1, figsize=(7, 1.8 * len(keys)), sharex=True, squeeze=False)
    for ax, key in zip(axes[:, 0], keys):
        values = np.array([r[key] for r in records], dtype=float)
        ax.plot(steps, values, ".", alpha=0.4)
        if len(values) >= 2:
            w = min(window, len(values))
            running = np.convolve(values, np.ones(w) / w, mode="valid")
            ax.plot(steps[w - 1:], running, "-")
        ax.set_ylabel(key.replace("_", " "), fontsize=8)
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel(f"{title} step")
    fig.suptitle(f"{title}: {log_path.parent.name}", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def curve_or_reason(out: Path, title: str) -> str:
    """``out/curve.png`` drawn from ``out/log.jsonl`` (its path), or why it was not: a finished run never fails on
    its plot (matplotlib is an optional extra)."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        return 'not drawn (matplotlib is not installed: pip install "dreamer-gym[plots]"); the log is in log.jsonl'
    return str(plot_curve(out / "log.jsonl", out / "curve.png", title=title))


def text_table(rows: list[dict[str, object]]) -> str:
    """``rows`` (same keys) as an aligned plain-text table: what the command line prints."""
    cols = list(rows[0])
    widths = {c: max(len(c), *(len(f"{r[c]}") for r in rows)) for c in cols}
    line = " | ".join(c.ljust(widths[c]) for c in cols)
    sep = "-+-".join("-" * widths[c] for c in cols)
    body = [" | ".join(f"{r[c]}".ljust(widths[c]) for c in cols) for r in rows]
    return "\n".join([line, sep, *body])


def learning_summary(log_path: Path, window: int = 5) -> str:
    """What changed between the first and the last ``window`` steps of a run, as a markdown table: the reward,
    the shares of rollouts that moved the score / kept everything / kept nothing, the tool mix and what kind
    of entries the policy kept (read off its own rollouts, not its weights)."""
    import numpy as np

    records = read_log(log_path)
    if not records:
        return "(no steps logged)"
    w = max(1, min(window, len(records) // 2 or 1))
    spans = {f"steps {records[0]['step']}-{records[w - 1]['step']}": records[:w],
             f"steps {records[-w]['step']}-{records[-1]['step']}": records[-w:]}

    def mean(rs: list[dict[str, Any]], key: str) -> float:
        return float(np.mean([r[key] for r in rs if key in r])) if any(key in r for r in rs) else float("nan")

    def shares(rs: list[dict[str, Any]], key: str, top: int = 6) -> str:
        total: dict[str, float] = {}
        for r in rs:
            for k, v in r.get(key, {}).items():
                total[k] = total.get(k, 0.0) + v
        n = sum(total.values()) or 1.0
        return ", ".join(f"{k} {v / n:.0%}" for k, v in sorted(total.items(), key=lambda kv: -kv[1])[:top])

    drops = any(r.get("dropped_labels") for r in records)  # the ``drop`` grammar: what it leaves out
    rows = ["| span | reward | score moved | keep-all | empty | entries after | entropy | tool mix | kept (kind/tag) |"
            + (" dropped (kind/tag) |" if drops else ""),
            "|---|---|---|---|---|---|---|---|---|" + ("---|" if drops else "")]
    for label, rs in spans.items():
        rows.append(f"| {label} | {mean(rs, 'reward'):+.4f} | {mean(rs, 'score_changed'):.2f} | "
                    f"{mean(rs, 'keep_all'):.2f} | {mean(rs, 'empty'):.2f} | {mean(rs, 'mean_entries_after'):.1f} | "
                    f"{mean(rs, 'entropy'):.3f} | {shares(rs, 'tool_mix')} | {shares(rs, 'kept_labels')} |"
                    + (f" {shares(rs, 'dropped_labels')} |" if drops else ""))
    return "\n".join(rows)


def training_record(checkpoint: str | Path, hardware: str) -> dict[str, Any]:
    """What training a checkpoint cost, read from its run (``RUN/checkpoint-N``, beside ``RUN/config.yaml`` and
    ``RUN/log.jsonl``): the board's training columns (a submission's ``consolidator.training``).

    ``steps`` is N; ``commits`` the rollouts (committed regions) behind them, steps x regions (or groups) per step
    x group size (or generations); ``wall_s`` the seconds the log records for steps 1..N (rollouts and updates, not
    start-up); ``hardware`` what it ran on, as the submitter says (nothing in a log can tell)."""
    import re

    import yaml

    from dreamer_gym.errors import ConfigError

    path = Path(checkpoint)
    m = re.fullmatch(r"checkpoint-(\d+)", path.name)
    run = path.parent
    if m is None or not (run / "config.yaml").is_file() or not (run / "log.jsonl").is_file():
        raise ConfigError(f"`--training-run`: expected a checkpoint folder RUN/checkpoint-N of a training run (with "
                          f"RUN/config.yaml and RUN/log.jsonl beside it), got {str(checkpoint)!r}")
    steps = int(m[1])
    config = yaml.safe_load((run / "config.yaml").read_text()) or {}
    per_step = [config.get(k) for k in ("regions_per_step", "groups_per_step", "group_size", "num_generations")]
    regions = per_step[0] or per_step[1]
    group = per_step[2] or per_step[3]
    if not (regions and group):
        raise ConfigError(f"`--training-run`: {run}/config.yaml names no regions (or groups) per step and group size")
    by_step = {int(r["step"]): r for r in read_log(run / "log.jsonl") if 1 <= int(r.get("step", 0)) <= steps}
    records = list(by_step.values())  # a resumed run repeats steps in its log: the last record of each counts
    seconds = sum(sum(r["seconds"].values()) if isinstance(r.get("seconds"), dict)
                  else float(r.get("seconds_play", 0.0)) + float(r.get("seconds_update", 0.0)) for r in records)
    if len(records) != steps:
        raise ConfigError(f"`--training-run`: {run}/log.jsonl holds {len(records)} of the {steps} steps of {path.name}")
    return {"steps": steps, "commits": steps * int(regions) * int(group), "wall_s": round(seconds, 1),
            "hardware": hardware}
