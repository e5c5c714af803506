"""Docs that cannot rot: every example under docs/examples runs, and the tables the pages quote are the recorded
runs' own output (research/results/, outside the docs and the package)."""
from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "research" / "results"
EXAMPLES = sorted((ROOT / "docs" / "examples").glob("*.py"))
# run on demand (-m heavy) since issue 39 (CI time): the 135M model end to end (~56 s; the prompted consolidator and
# the LLM agent keep CI tests), MaskablePPO (~30 s; tests/training/test_oplevel_trainer.py keeps it in CI) and the
# verifiers episode (~15 s; tests/test_verifiers_env.py plays the same scripted episode through vf-eval in CI).
# Since issue 40 (CI time), each with the CI test that plays the same loop: the OpenEnv server and client (~13 s;
# tests/test_openenv_server.py::test_served_episode_equals_in_process serves an id with `dreamer-gym serve` and
# commits through ConsolidationEnvClient), the op-level wrapper and the consensus rule (~11 s;
# tests/envs/test_oplevel_wrapper.py), the PettingZoo env with dedupe and board-dedupe (~15 s;
# tests/envs/test_parallel_env.py) and Ray against in-process (~11 s, most of it Ray's start;
# tests/test_ray_executor.py::test_ray_results_equal_the_local_executors_on_the_same_seeds), and the async vector env
# (~7 s; tests/envs/test_vector_env.py plays keep and commit on SharedAsyncVectorEnv, the make_vec entry point, against
# separate envs). Since issue 40, session 4: the MiniWoB quickstart (~8 s, most of it Chromium's start;
# tests/suites/test_miniwob.py plays the same loop on login-user in a real Chromium: the gold path typed into named
# fields, `test_gold_path_solves_seeded_dev_tasks[login-user]`, and a bad action as an observation,
# `test_bad_actions_are_explained_and_change_nothing`). The quickstart, the plug-ins and the leaderboard submission
# stay in CI: every family of examples (the env, bring your own, the leaderboard) runs there.
HEAVY_EXAMPLES = frozenset({"llm_quickstart.py", "byo_sb3.py", "verifiers_episode.py", "byo_openenv.py",
                            "byo_oplevel.py", "parallel_env.py", "ray_executor.py", "vector_env.py",
                            "miniwob_quickstart.py"})
# the command-line arguments an example runs with here, where its docstring offers a smaller run
EXAMPLE_ARGV = {"leaderboard_submit.py": ["1"]}  # one bank, not two: half the episodes of each of its three runs


@pytest.mark.jvm
@pytest.mark.parametrize("path", [pytest.param(p, id=p.name, marks=pytest.mark.heavy) if p.name in HEAVY_EXAMPLES
                                  else pytest.param(p, id=p.name) for p in EXAMPLES])
def test_example_runs(path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.argv", [str(path), *EXAMPLE_ARGV.get(path.name, [])])
    runpy.run_path(str(path), run_name="__main__")
    out = capsys.readouterr().out
    assert "score" in out


def test_readme_opens_with_two_commands() -> None:
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    block = readme.split("```bash", 1)[1].split("```", 1)[0]
    commands = [ln.split("#")[0].strip() for ln in block.strip().splitlines()]
    assert commands == ["make demo", "make test"]
    ci = (Path(__file__).parent.parent / ".ci" / "run").read_text()
    assert "make test" in ci


def test_prompts_page_quotes_every_prompt_file_verbatim() -> None:
    import re

    from dreamer_gym.prompts import load_prompt

    page = (Path(__file__).parent.parent / "docs" / "prompts.md").read_text()
    quoted = dict(re.findall(r"<!-- prompt: (\w+) -->\n```text\n(.*?)\n```", page, flags=re.S))
    files = sorted(p.stem for p in (Path(__file__).parent.parent / "dreamer_gym" / "prompts").glob("*.md"))
    assert sorted(quoted) == files
    for name, text in quoted.items():
        assert text == load_prompt(name), f"docs/prompts.md is out of date for {name}.md"


def test_llm_page_quotes_the_recorded_llm_study() -> None:
    """The tables in docs/llm.md are what research/llm_study.py computes from its recorded run."""
    from research.llm_study import tables

    summary = json.loads((RESULTS / "llm_study_summary.json").read_text())
    page = (ROOT / "docs" / "llm.md").read_text()
    rendered = tables(summary["consolidator"], summary["agents"])
    assert rendered == summary["tables"]
    for block in rendered.split("\n\n"):
        assert block in page


@pytest.mark.parametrize("suite", ["alfworldgen", "miniwob"])
def test_held_out_validity_pages_are_the_studys_own_output(suite: str) -> None:
    """research/results/validity/<suite>.md is what `dreamer-gym validity --env ...` wrote from its summary."""
    from dreamer_gym.studies.validity import ValidityConfig, to_markdown

    root = RESULTS / "validity"
    summary = json.loads((root / f"{suite}_summary.json").read_text())
    config = json.loads((root / f"{suite}_config.json").read_text())
    config = ValidityConfig(**{**config, "families": tuple(config["families"]) if config["families"] else None,
                               "seeds": tuple(config["seeds"]), "policies": tuple(config["policies"])})
    page = (root / f"{suite}.md").read_text()
    assert to_markdown(summary, config) == page
    # the ordering (oracle > raw > empty, blind and wrong procedures < raw) holds with CIs excluding 0; the
    # prose decoy's "equal" is reported as measured (ALFWorldGen: prose -2.8 points, see docs/suites.md)
    ordering = [c for c in summary["comparisons"] if c["expect"] == "greater"]
    assert len(ordering) == 4 and all(c["holds"] and c["ci95"][0] > 0 for c in ordering), ordering


@pytest.mark.parametrize("record", ["transfer_fixed.json", "transfer_prompted.json"])
def test_suites_page_quotes_the_recorded_transfer_runs(record: str) -> None:
    """docs/suites.md's transfer tables are the recorded `evaluate --track transfer --out` runs, unedited."""
    from dreamer_gym.cli import markdown_table

    docs = Path(__file__).parent.parent / "docs"
    page = (docs / "suites.md").read_text()
    suites = json.loads((RESULTS / record).read_text())["suites"]
    ran = {env_id: s["rows"] for env_id, s in suites.items() if "rows" in s}
    assert {"MemoryConsolidation-ScienceWorld-v0", "MemoryConsolidation-ALFWorldGen-v0"} <= set(ran)
    for env_id, rows in ran.items():
        assert markdown_table(rows) in page, f"docs/suites.md does not quote {record}'s {env_id} table"


def test_grpo_page_quotes_the_recorded_run_and_held_out_study() -> None:
    """docs/grpo.md's results are the recorded drop-grammar run's learning summary and the held-out study's
    own numbers (research/results/before-after/issue12/), not numbers typed by hand."""
    from dreamer_gym.training.logs import learning_summary

    docs = Path(__file__).parent.parent / "docs"
    record = RESULTS / "before-after" / "issue12"
    page = (docs / "grpo.md").read_text()
    assert learning_summary(record / "drop-grammar-log.jsonl") in page
    summary = json.loads((record / "sw-track" / "summary.json").read_text())
    assert summary["setting"]["track"] == "scienceworld" and summary["setting"]["split"] == "test"
    for policy, scores in summary["table"].items():
        reward = summary["rewards"]["table"][policy]
        row = (f" | {reward['all']:+.3f} | {scores['all']:.1f} | {scores['tokens']:.0f} | {scores['entries']:.1f} |")
        assert any(line.startswith(f"| {policy}") and line.endswith(row) for line in page.splitlines()), policy
    for comparison in summary["rewards"]["comparisons"]:  # paired reward, then paired score, each with its CI
        lo, hi = comparison["ci95"]
        assert f"{comparison['mean']:+.3f} [{lo:+.3f}, {hi:+.3f}]" in page, comparison
    for comparison in summary["comparisons"]:
        lo, hi = comparison["ci95"]
        assert f"{comparison['mean']:+.1f} [{lo:+.1f}, {hi:+.1f}]" in page, comparison


def test_grpo_page_quotes_the_ops_grammar_run_and_its_held_out_study() -> None:
    """docs/grpo.md's `ops` grammar results are the recorded seed-0 run's learning summary and the held-out study's
    own numbers."""
    from dreamer_gym.training.logs import learning_summary

    docs = Path(__file__).parent.parent / "docs"
    record = RESULTS / "before-after" / "issue12"
    page = (docs / "grpo.md").read_text()
    assert learning_summary(record / "ops-grammar-log.jsonl") in page
    _quotes_study(page, json.loads((record / "sw-track-ops" / "summary.json").read_text()))


def test_byo_page_quotes_the_rule_choice_study() -> None:
    docs = Path(__file__).parent.parent / "docs"
    page = (docs / "byo.md").read_text()
    summary = json.loads((RESULTS / "before-after" / "issue13" / "rule-choice.json").read_text())["summary"]
    for label, name in (("merge everything", "merge-all"), ("consensus (merge procedures, drop the rest)", "consensus"),
                        ("dedupe", "dedupe"), ("keep-all", "keep-all")):
        assert f"| {label} | {summary[name]['reward']:+.4f} | {summary[name]['tokens']:.0f} |" in page, name
    assert f"| {summary['per_region_choice']:+.4f} | |" in page and f"**{summary['per_region_choice_gain']:+.4f}**" in page
    assert f"Consensus beats merge-everything on {summary['consensus_beats_merge_all']} of the 24" in page


def test_byo_page_quotes_the_recorded_ceiling() -> None:
    """docs/byo.md's ceiling table and its summary are the recorded search's own numbers."""
    docs = Path(__file__).parent.parent / "docs"
    page = (docs / "byo.md").read_text()
    record = json.loads((RESULTS / "before-after" / "issue13" / "ceiling.json").read_text())
    for row in record["regions"]:
        cells = (f"| {row['seed']} {row['family']} | {row['entries']} | {row['empty']:.1f} | {row['keep_all']:.1f} | "
                 f"{row['merge_procedures']:.1f} | {row['best']:.1f} | {row['oracle']:.1f} |")
        assert cells in page, row["seed"]
    summary = record["summary"]
    assert f"**{summary['best']:.2f}**" in page and f"**{summary['merge_procedures']:.2f}**" in page
    assert summary["best"] >= 0.5  # the issue's floor for the ops' ceiling


def test_byo_page_quotes_the_held_out_study() -> None:
    """docs/byo.md's held-out table and paired CIs are the study's own numbers (research/results/before-after/issue13/)."""
    docs = Path(__file__).parent.parent / "docs"
    page = (docs / "byo.md").read_text()
    for study in ("sw-track", "sw-track-warm", "sw-track-class"):
        _quotes_study(page, json.loads((RESULTS / "before-after" / "issue13" / study / "summary.json").read_text()))


def _quotes_study(page: str, summary: dict) -> None:
    assert summary["setting"]["track"] == "scienceworld" and summary["setting"]["split"] == "test"
    for policy, scores in summary["table"].items():
        reward = summary["rewards"]["table"][policy]
        row = f"| {policy} | {reward['all']:+.3f} | {scores['all']:.1f} | {scores['tokens']:.0f} | {scores['entries']:.1f} |"
        assert row in page, row
    for rewards, scores in zip(summary["rewards"]["comparisons"], summary["comparisons"]):
        (rlo, rhi), (slo, shi) = rewards["ci95"], scores["ci95"]
        assert (f"| {rewards['a']} - {rewards['b']} | {rewards['mean']:+.3f} [{rlo:+.3f}, {rhi:+.3f}] | "
                f"{scores['mean']:+.1f} [{slo:+.1f}, {shi:+.1f}]") in page, rewards["a"]


def test_env_page_quotes_the_recorded_cooperation_study() -> None:
    root = Path(__file__).parent.parent
    summary = json.loads((RESULTS / "before-after" / "issue15" / "cooperation.json").read_text())["summary"]
    page = (root / "docs" / "env.md").read_text()
    diff = summary["board-dedupe minus dedupe"]
    assert f"**{diff['mean']:+.5f}** [{diff['ci95'][0]:+.6f}, {diff['ci95'][1]:+.5f}]" in page
    assert f"differ in {diff['resets_where_banks_differ']} of {diff['resets']} resets" in page
    for name, label in (("keep-all", "keep-all"), ("dedupe", "independent dedupe"), ("board-dedupe", "board-dedupe")):
        row = summary["policies"][name]
        assert f"| {label} | {row['joint_reward_mean']:.4f} | {row['tokens_after_mean']:.0f} |" in page


def test_env_page_tool_table_is_the_generated_one() -> None:
    """docs/env.md's tool table is ``toolspec.tool_table()``: the page cannot drift from the one definition."""
    from dreamer_gym.envs.toolspec import tool_table

    page = (Path(__file__).parent.parent / "docs" / "env.md").read_text()
    block = page.split("<!-- tool-table:", 1)[1].split("-->", 1)[1].split("<!-- /tool-table -->", 1)[0]
    assert block.strip() == tool_table(), "regenerate the table: python -c 'from dreamer_gym.envs.toolspec " \
                                          "import tool_table; print(tool_table())'"
