"""A newcomer's first day from the wheel (issue 39, item 1): docs/start-submitter.md run as written.

The wheel is built from this checkout and put in an empty folder outside it; the page's ```bash blocks then run in
order in one bash session there (as a reader types them in one terminal: the venv it activates stays active), with
no PYTHONPATH and a fresh ``$DREAMER_GYM_CACHE``: the fresh venv, the package from the wheel, a consolidator package
of the reader's own registered by entry point, its check, submit -> validate -> render on the try-out track, and a
track file. A block right after the page's "not run" comment (the real tracks: minutes to hours) is only parsed, by
tests/leaderboard/test_tryout_track.py. The scores the page states must be the ones printed, exactly (the track
seeds every episode: submit and validate, two processes, agree to 1e-6 or validate rejects), and the shipped
reference re-scores, from the wheel, to the score the page gives it.

Each command's wall time is printed (run with ``-s``) and written to ``$DREAMER_GYM_WHEEL_TIMINGS`` where set. pip
resolves the pinned versions of ``constraints.txt`` (``PIP_CONSTRAINT``), from this machine's package mirrors.
Heavy: it builds and installs a wheel (minutes): ``pytest tests/test_wheel_submitter.py -m heavy -s``.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "start-submitter.md"
NOT_RUN = "<!-- not run by tests/test_wheel_submitter.py"
STEP = "::step"  # the driver's marker lines: ::step INDEX START END (bash's $EPOCHREALTIME)


def page_blocks(kind: str = "bash") -> list[tuple[str, bool]]:
    """The page's ```KIND blocks in order, each with whether this test runs it (a block right after the NOT_RUN
    comment is only parsed, by tests/leaderboard/test_tryout_track.py)."""
    text = PAGE.read_text()
    out = []
    for m in re.finditer(rf"```{kind}\n(.*?)```", text, flags=re.S):
        before = text[:m.start()].rstrip().rsplit("\n", 1)[-1]
        out.append((m.group(1), not before.startswith(NOT_RUN)))
    return out


def command_units(block: str) -> list[str]:
    """A block as the commands a reader runs one after another: each line, a heredoc with the line that opens it."""
    units: list[str] = []
    lines = iter(block.splitlines())
    for line in lines:
        if not line.strip():
            continue
        unit = [line]
        heredoc = re.search(r"<<'?(\w+)'?", line)
        if heredoc:
            for body in lines:
                unit.append(body)
                if body == heredoc.group(1):
                    break
        units.append("\n".join(unit))
    return units


def driver(units: list[str], folder: Path) -> Path:
    """One bash script that sources each unit in turn and marks its wall time (a reader's single terminal)."""
    lines = ["set -eo pipefail"]
    for i, unit in enumerate(units):
        path = folder / f"unit{i:02d}.sh"
        path.write_text(unit + "\n")
        lines += [f"start=$EPOCHREALTIME; source {path}", f'echo "{STEP} {i} $start $EPOCHREALTIME"']
    script = folder / "driver.sh"
    script.write_text("\n".join(lines) + "\n")
    return script


def build_wheel(out: Path) -> Path:
    """The wheel of this checkout, built from a clean copy (a stale build/ folder cannot leak into it)."""
    src = out / "src"
    src.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "dreamer_gym", src / "dreamer_gym", ignore=shutil.ignore_patterns("__pycache__"))
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                           str(out), str(src)], capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel,) = out.glob("dreamer_gym-*.whl")
    return wheel


def newcomer_env(home: Path) -> dict[str, str]:
    """This machine's environment less anything that points into the checkout or its venv."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if not p.startswith(str(ROOT)))
    env.update(DREAMER_GYM_CACHE=str(home / "cache"), PIP_CONSTRAINT=str(ROOT / "constraints.txt"),
               PIP_DISABLE_PIP_VERSION_CHECK="1", MPLBACKEND="Agg")
    return env


@pytest.mark.heavy
def test_the_submitter_page_runs_as_written_from_the_wheel(tmp_path: Path) -> None:
    home = tmp_path / "newcomer"  # outside the checkout: /tmp/pytest-.../newcomer
    home.mkdir()
    assert ROOT not in home.parents
    clock = time.perf_counter()
    wheel = build_wheel(tmp_path / "dist")
    shutil.copy(wheel, home / wheel.name)
    built = time.perf_counter() - clock
    units = [u for body, run in page_blocks() if run for u in command_units(body)]
    script = driver(units, tmp_path)
    env = newcomer_env(tmp_path)
    proc = subprocess.run(["bash", str(script)], cwd=home, env=env, capture_output=True, text=True, timeout=3600)
    out = proc.stdout
    seconds = {int(i): float(end) - float(start)
               for i, start, end in re.findall(rf"^{STEP} (\d+) ([\d.]+) ([\d.]+)$", out, flags=re.M)}
    timings = [("build the wheel (from the checkout)", built)] + [
        (units[i].splitlines()[0][:100], seconds[i]) for i in sorted(seconds)]
    assert proc.returncode == 0, f"the page's command {units[len(seconds)][:300]!r} failed:\n{out[-3000:]}\n" \
                                 f"{proc.stderr[-5000:]}"
    assert len(seconds) == len(units)

    # the package came from the wheel, into the page's venv in the folder, not from the checkout
    python = home / ".venv" / "bin" / "python"
    where = subprocess.run([str(python), "-c", "import dreamer_gym, my_consolidator; print(dreamer_gym.__file__)"],
                           cwd=home, env=env, capture_output=True, text=True, timeout=300)
    assert where.returncode == 0 and where.stdout.startswith(str(home / ".venv")), where.stdout + where.stderr

    # the scores the page states are the ones printed
    [(expected, _)] = page_blocks("text")
    for line in expected.strip().splitlines():
        pattern = re.escape(line).replace(re.escape(".../"), ".*/")
        assert re.search(rf"^{pattern}$", out, flags=re.M), f"the page expects {line!r}; the run printed:\n{out}"
    assert "ConsolidatorReport(name='ProceduresOnly'" in out and "invalid_calls=[0]" in out, out
    readme = (home / "leaderboards" / "README.md").read_text()
    assert re.search(r"^\| tryout \| my-procedures \| contender \| re-scored \| \+0\.0101 \|.*\| try-out, not ranked \|$",
                     readme, flags=re.M), readme
    assert "\n| my-track | my-procedures | contender | re-scored |" in readme  # the track file's row, after render

    # the shipped reference re-scores, from the wheel, to the score the page gives it
    reference = json.loads(subprocess.run(
        [str(python), "-c", "from dreamer_gym.leaderboard.submission import references_dir as d; "
                            "import json; print(json.dumps(str(d() / 'tryout-oracle.json')))"],
        cwd=home, env=env, capture_output=True, text=True, timeout=300).stdout)
    clock = time.perf_counter()
    check = subprocess.run([str(home / ".venv" / "bin" / "dreamer-gym"), "leaderboard", "validate", reference,
                            "--out-dir", "reference-results", "--quiet"], cwd=home, env=env, capture_output=True,
                           text=True, timeout=1800)
    timings.append(("validate the shipped reference (tryout-oracle.json)", time.perf_counter() - clock))
    stated = re.search(r"\*\*([+-]\d\.\d{4})\*\*", PAGE.read_text()).group(1)
    assert check.returncode == 0 and f"tryout: score {stated}" in check.stdout, check.stdout + check.stderr[-3000:]

    report = "\n".join(f"{s:8.1f} s  {what}" for what, s in timings)
    print(f"\nthe submitter page from the wheel, step by step ({os.cpu_count()} cores):\n{report}")
    if os.environ.get("DREAMER_GYM_WHEEL_TIMINGS"):
        Path(os.environ["DREAMER_GYM_WHEEL_TIMINGS"]).write_text(json.dumps(timings, indent=1))
