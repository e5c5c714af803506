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
