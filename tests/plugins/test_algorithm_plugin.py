"""A training algorithm from outside the package: a module plus a real ``.dist-info`` entry point in
``dreamer_gym.algorithms``, found by ``dreamer-gym train --algo mine`` in a fresh interpreter with no edit inside
``dreamer_gym/``. The algorithm is cheap but real: it plays a registered consolidator on the given env id and
writes what the episode did, its config read from the ``--config`` YAML with a flag on top."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from plugin_dist import run_cli, write_dist

ENV_ID = "MemoryConsolidation-ScienceWorld-v1"
# the user's package: a config dataclass (no `load`: dreamer_gym reads the YAML) and a run function
SOURCE = '''
    """Play one registered consolidator on an env id (one cheap evaluation episode per reset) and write the result."""
    import json
    from dataclasses import dataclass, field
    from pathlib import Path

    from dreamer_gym.training import Algorithm, TrainOptions


    @dataclass(frozen=True)
    class PlayConfig:
        env_id: str = field(default="MemoryConsolidation-ScienceWorld-v1", metadata={"help": "the env id"})
        consolidator: str = field(default="keep-all", metadata={"help": "a registered consolidator"})
        seeds: tuple[int, ...] = (0,)
        out: str = "result.json"


    def run(config: PlayConfig, options: TrainOptions) -> int:
        from dreamer_gym.consolidators import make_consolidator, run_episode
        from dreamer_gym.envs.consolidation import ConsolidationEnv

        env = ConsolidationEnv.experiment(config.env_id, eval_in_family=1, eval_other=0, service="inprocess")
        try:
            infos = [run_episode(env, make_consolidator(config.consolidator), seed=s) for s in config.seeds]
        finally:
            env.close()
        rows = [{"family": i["family"], "reward": i["return"], "entries_before": i["size_before"]["entries"],
                 "entries_after": i["size_after"]["entries"]} for i in infos]
        Path(config.out).write_text(json.dumps({"env_id": config.env_id, "consolidator": config.consolidator,
                                                "config_path": str(options.config_path), "episodes": rows}))
        print(f"played {len(rows)} episode(s) of {config.consolidator}")
        return 0


    ALGORITHM = Algorithm(name="mine", summary="play a registered consolidator (a plug-in)", run=run,
                          config=PlayConfig, needs=("gymnasium",))
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_dist(tmp_path_factory.mktemp("site"), "my-algorithm", {"my_algorithm.py": SOURCE},
                      {"dreamer_gym.algorithms": {"mine": "my_algorithm:ALGORITHM"}})


@pytest.mark.jvm
def test_an_entry_point_algorithm_trains_by_name_from_the_cli(site: Path, tmp_path: Path) -> None:
    """Its config fields are flags over its YAML (``--consolidator empty`` wins over the file's keep-all), and its
    run really played the env: the empty consolidator committed no entry, from a non-empty region."""
    out = tmp_path / "result.json"
    config = tmp_path / "mine.yaml"
    config.write_text(yaml.safe_dump({"env_id": ENV_ID, "consolidator": "keep-all", "out": str(out)}))
    proc = run_cli(site, "train", "--algo", "mine", "--config", str(config), "--consolidator", "empty")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "played 1 episode(s) of empty" in proc.stdout
    result = json.loads(out.read_text())
    assert (result["env_id"], result["consolidator"], result["config_path"]) == (ENV_ID, "empty", str(config))
    [episode] = result["episodes"]
    assert episode["family"] == "grow-plant" and episode["entries_before"] > 0 and episode["entries_after"] == 0


def test_the_plugin_is_in_the_live_choices_and_its_fields_are_flags(site: Path, tmp_path: Path) -> None:
    """``--algo`` lists the entry point beside the built-ins; a typo names it; ``--help`` shows its fields; an
    option it does not take is refused by name; an unknown YAML key names the config class's fields."""
    typo = run_cli(site, "train", "--algo", "mien", "--config", "grpo-smollm2-cpu")
    assert typo.returncode == 2 and "Traceback" not in typo.stderr
    assert "'mine'" in typo.stderr and "did you mean 'mine'" in typo.stderr and "'grpo'" in typo.stderr

    helped = run_cli(site, "train", "--algo", "mine", "--config", "x.yaml", "--help")
    assert helped.returncode == 0, helped.stderr[-2000:]
    assert "--algo mine: PlayConfig fields" in helped.stdout and "--consolidator" in helped.stdout
    assert "my_algorithm:ALGORITHM" in helped.stdout  # --algo's help names the plug-in without importing it

    config = tmp_path / "bad.yaml"
    config.write_text(yaml.safe_dump({"consolidatr": "empty"}))
    probe = run_cli(site, "train", "--algo", "mine", "--config", str(config), "--probe", "2")
    assert probe.returncode == 2 and "--probe is not for --algo mine" in probe.stderr, probe.stderr[-2000:]
    bad = run_cli(site, "train", "--algo", "mine", "--config", str(config))
    assert bad.returncode == 2 and "unknown PlayConfig field(s) ['consolidatr']" in bad.stderr, bad.stderr[-2000:]
