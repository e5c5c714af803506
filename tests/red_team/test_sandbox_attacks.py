"""Attacks on the verified tier's sandbox: each test fails if the attack gets a score.

A submitter's consolidator runs in bubblewrap (dreamer_gym/leaderboard/sandbox.py): it may not import the
simulator, read the pool files, or reach the network; verify refuses to run without the sandbox. The attacks
run through the real relay (run_sandboxed: the sandboxed child, the pipe, the real env and its process reward
service) on the smallest track the code allows: one family, one bank, one region, one evaluation episode.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from dreamer_gym.leaderboard import Track, load_track
from dreamer_gym.leaderboard.sandbox import Sandbox, SandboxUnavailable, SandboxViolation
from dreamer_gym.leaderboard.verify import run_sandboxed, verify

FAMILY = "pick_and_place_simple"
ATTACKS = '''
import json, socket
from pathlib import Path
from dreamer_gym.consolidators.fixed import DedupeConsolidator


class ImportsTheSimulator(DedupeConsolidator):
    """Start ScienceWorld itself and read the gold action sequences (verified above the oracle before the sandbox)."""

    def actions(self, env, obs, info):
        import scienceworld  # noqa: F401
        yield from super().actions(env, obs, info)


class ReadsThePool(DedupeConsolidator):
    """Open the pool file the env was built on (its TEST texts and TRAIN gold paths)."""

    def actions(self, env, obs, info):
        import dreamer_gym
        Path(dreamer_gym.__file__).parent.joinpath("data", "POOL").read_bytes()
        yield from super().actions(env, obs, info)


class ReadsTheProcedures(DedupeConsolidator):
    """Emit the suite adapter's reference procedures."""

    def actions(self, env, obs, info):
        from dreamer_gym.suites.scienceworld import PROCEDURES
        yield json.dumps({"tool": "emit", "kind": "procedure", "text": str(list(PROCEDURES)),
                          "provenance": [info["region"][0]["id"]]})
        yield from super().actions(env, obs, info)


class PhonesHome(DedupeConsolidator):
    """Fetch banks written elsewhere (or send the region out)."""

    def actions(self, env, obs, info):
        socket.create_connection(("1.1.1.1", 443), timeout=5).close()
        yield from super().actions(env, obs, info)
'''


def small_track() -> Track:
    """One region of a track whose env needs no JVM (ALFWorld-engine games), one evaluation episode."""
    data = {**load_track("alfworld-gen").__dict__, "name": "tiny-sandbox", "families": (FAMILY,), "banks": (0,),
            "eval_in_family": 1, "eval_other": 0}
    return Track(**data)


@pytest.fixture(scope="module")
def code(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The attacker's code in a folder of its own (under /tmp, bound back into the sandbox)."""
    import dreamer_gym

    folder = tmp_path_factory.mktemp("submitter")
    pool = next(p.name for p in (Path(dreamer_gym.__file__).parent / "data").glob("*.json.gz"))
    (folder / "attacks.py").write_text(textwrap.dedent(ATTACKS).replace("POOL", pool))
    return folder


@pytest.mark.parametrize(("attack", "said"), [
    ("ImportsTheSimulator", "ImportError: scienceworld is hidden inside the verify sandbox"),
    ("ReadsThePool", "FileNotFoundError: .*No such file"),
    ("ReadsTheProcedures", "ImportError: dreamer_gym.suites.scienceworld.PROCEDURES is hidden"),
    ("PhonesHome", "OSError|gaierror|unreachable"),
])
def test_an_attack_inside_the_sandbox_is_a_failure_not_a_score(code: Path, attack: str, said: str) -> None:
    with pytest.raises(SandboxViolation, match=f"failed inside the verify sandbox: .*({said})"):
        run_sandboxed(small_track(), f"attacks:{attack}", Sandbox(code=(code,)), kind="contender")


def test_an_honest_consolidator_runs_through_the_sandbox_and_scores(code: Path) -> None:
    data = run_sandboxed(small_track(), "dedupe", Sandbox(code=(code,)), kind="fixed")
    [block] = data["tracks"]
    [region] = block["regions"]
    assert region["family"] == FAMILY and region["emitted"]  # dedupe kept the region's entries, through the pipe
    assert region["claimed"]["reward"] == pytest.approx(block["claimed"]["score"])


def test_verify_refuses_without_its_sandbox(tmp_path: Path) -> None:
    track = Track(**{**load_track("scienceworld").__dict__, "name": "tiny-verify", "banks": (0,)})
    with pytest.raises(SandboxUnavailable, match=r"`no-such-bwrap` is not installed: run `make sandbox`.*never runs "
                                                 "unsandboxed"):
        verify(track, "dedupe", tmp_path, sandbox=Sandbox(binary="no-such-bwrap"))
    assert not (tmp_path / "pool.json.gz").exists()  # refused before any acquisition


def test_a_sandbox_that_does_not_hide_fails_its_self_test(tmp_path: Path) -> None:
    """A 'sandbox' that runs the command as is (no isolation) is caught by the self-test, not trusted."""
    fake = tmp_path / "fake-bwrap"
    fake.write_text('#!/bin/sh\nwhile [ "$1" != "--" ]; do shift; done; shift; exec "$@"\n')
    fake.chmod(0o755)
    with pytest.raises(SandboxUnavailable, match="failed its self-test: .*(readable|imports|reachable)"):
        Sandbox(binary=str(fake)).self_test()


def test_a_code_folder_that_holds_hidden_paths_does_not_uncover_them() -> None:
    """The submitter's folder is bound in before the covers: naming the whole checkout as 'my code' leaves its
    data, results and git objects hidden (the self-test opens one and imports the simulators)."""
    from dreamer_gym.leaderboard.sandbox import package_root

    Sandbox(code=(package_root().parent,)).self_test()
