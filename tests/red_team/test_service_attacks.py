"""Red team: a policy that reaches the reward service itself (issue 29). Each test is an attack that used to
work; it fails if the attack is accepted. Real process services on the real ScienceWorld pool (the track runs of the
attacking policies on one region of the alfworld-gen pool, whose simulator needs no JVM); requests sent raw over the
connection, past the client, so what is tested is the far side."""
from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import time
from collections.abc import Iterator
from multiprocessing.connection import Client
from typing import Any

import pytest

import dreamer_gym  # noqa: F401 - registers the ids
from dreamer_gym.envs.toolspec import MAX_PROVENANCE
from dreamer_gym.errors import RewardServiceError
from dreamer_gym.leaderboard import Track, load_track, run_track
from dreamer_gym.memory import MemoryEntry
from dreamer_gym.service import SERVICE_OPERATIONS, CommitRequest, ProcessRewardService, Referee
from dreamer_gym.service.host import ServiceHost
from dreamer_gym.service.messages import (
    CITED_RANGES,
    COMMITS_PER_REQUEST,
    PROCESS_DIAGNOSTICS,
    RequestTooLarge,
    commit_bytes,
    request_cap,
    split_to_fit,
)
from dreamer_gym.service.services import _Failed

from helpers import call, make_env

ENV_ID = "MemoryConsolidation-ScienceWorld-v1"
FAMILY = "lifespan-longest-lived"
# every name a request could try: the referee's attributes (private state, its pool, ledger, tickets and
# evaluator included), the object protocol, and names an attacker would guess
PROBES = sorted({*dir(Referee), "_pool", "_ledger", "_tickets", "_evaluator", "_store", "_sealed", "pool", "evaluator",
                 "reset_ledger", "reopen", "__class__", "__dict__", "__reduce__", "config", "withhold", "close",
                 "referee", "service", "eval", "exec", "system"} - {*SERVICE_OPERATIONS, *PROCESS_DIAGNOSTICS})


class _GetPid:
    """A request whose unpickling would run code in the service (``os.getpid``, harmless, but it could be anything)."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.getpid, ())


@pytest.fixture(scope="module")
def env():
    e = make_env(ENV_ID, eval_in_family=1, eval_other=0)  # the process service, the default; one episode a commit
    yield e
    e.close()


def _raw(service: ProcessRewardService, request: Any) -> Any:
    """Send ``request`` on the service's own connection, past the client's methods; the reply or the error."""
    conn = service._ensure()
    conn.send_bytes(request if isinstance(request, bytes) else pickle.dumps(request))
    reply = conn.recv()
    return reply.exc if isinstance(reply, _Failed) else reply


def test_the_operation_list_is_all_the_service_process_answers(env):
    assert SERVICE_OPERATIONS == ("public_pool", "open", "commit", "commit_many", "commit_joint", "finish", "stats")
    assert PROCESS_DIAGNOSTICS == ("pid", "worker_pids")
    service = env.unwrapped.service
    for name in PROBES:
        reply = _raw(service, (name, ()))
        assert isinstance(reply, RewardServiceError), f"{name!r} was answered: {reply!r:.200}"
        assert f"{name!r} is not a reward-service operation" in str(reply)
    # the listed ones are operations (a wrong call is refused for its arguments, not its name)
    for name, args in (("open", ()), ("commit", ()), ("commit_many", ("x",)), ("commit_joint", ("x",)),
                       ("finish", ())):
        reply = _raw(service, (name, args))
        assert isinstance(reply, RewardServiceError) and "not a reward-service operation" not in str(reply), name
    assert _raw(service, ("pid", ())) == service.pid != os.getpid()
    assert len(_raw(service, ("public_pool", ())).banks) > 1  # and the loop still serves


def test_private_state_and_code_in_a_request_are_refused(env):
    service = env.unwrapped.service
    for name in ("_pool", "_ledger", "__class__", "reset_ledger", "pool"):
        with pytest.raises(RewardServiceError, match=rf"request refused: '{name}' is not a reward-service operation"):
            raise _raw(service, (name, ()))
    with pytest.raises(RewardServiceError, match=r"request refused: it names (posix|os)\.getpid"):
        raise _raw(service, ("public_pool", (_GetPid(),)))
    with pytest.raises(RewardServiceError, match=r"expected \(operation, args tuple\)"):
        raise _raw(service, "_pool")
    with pytest.raises(RewardServiceError, match="does not unpickle"):
        raise _raw(service, b"\x80\x05not a pickle")
    with pytest.raises(RewardServiceError, match="expected a list of CommitRequest"):
        raise _raw(service, ("commit_many", ([("bank", 0)],)))
    public = env.unwrapped.pool
    assert not hasattr(public, "task_texts") and not hasattr(public, "train_gold")


def test_the_reward_host_answers_the_operation_list_only(env):
    """The host that async vector envs share: raw requests from an authenticated client."""
    service = ProcessRewardService(env.unwrapped.config)
    host = ServiceHost(service)
    try:
        conn = Client(host.address, authkey=host.authkey)
        for name in (*PROBES, *PROCESS_DIAGNOSTICS):
            conn.send((name, ()))
            status, value = conn.recv()
            assert status == "error" and f"{name!r} is not a reward-service operation" in str(value), name
        conn.send_bytes(pickle.dumps(("public_pool", (_GetPid(),))))
        status, value = conn.recv()
        assert status == "error" and "names" in str(value) and "getpid" in str(value)
        conn.send(("commit", ("not a request",)))
        assert "expected one CommitRequest" in str(conn.recv()[1])
        conn.close()
        assert len(host.client().public_pool().banks) > 1
    finally:
        host.close()
        service.close()


# --- oversized requests (issue 38): refused from their length, before they are read or unpickled ----------------
BIG = 200 * 2**20
REFUSED = r"request refused: it is over the reward service's cap of \d+ bytes .* nothing of it was read or unpickled"


def _big_commit() -> bytes:
    """A 200 MB commit, pickled as a client would send it."""
    entry = MemoryEntry("procedure", "x" * BIG, FAMILY)
    return pickle.dumps(("commit", (CommitRequest(0, FAMILY, "0" * 32, (entry,)),)))


def _peak_kb(pid: int) -> int:
    """VmHWM, the peak resident memory of process ``pid``, in kB."""
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM"))


def _reset_peak(pid: int) -> int:
    """Reset ``pid``'s VmHWM to its resident memory now (Linux ``clear_refs`` 5); that value, in kB."""
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")
    return _peak_kb(pid)


def _exit_peak_kb(service: ProcessRewardService) -> int:
    """Reap ``service``'s process (exited or exiting): its peak resident memory in kB over its life (which
    counts the image it was forked from, so compare it with a control service's)."""
    _, status, usage = os.wait4(service._process.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0  # a clean exit, its simulators closed
    return usage.ru_maxrss


def test_a_200_mb_commit_is_refused_by_the_service_process_from_its_length_in_under_a_second(env):
    """Sent raw on the service's own connection. The process reads the 4-byte length header only, answers with
    the refusal and exits (its one connection can no longer be read: the rest of the request is unread); the
    client's next request starts a fresh service with its live tickets, as after any death. Its peak memory is
    a control service's (the same start, the same request served, then stopped)."""
    control, service = ProcessRewardService(env.unwrapped.config), ProcessRewardService(env.unwrapped.config)
    try:
        for s in (control, service):
            s.public_pool()
        control._ensure().send(None)
        control_kb = _exit_peak_kb(control)
        conn, pid, payload = service._ensure(), service.pid, _big_commit()
        start = time.perf_counter()
        try:
            conn.send_bytes(payload)
        except BrokenPipeError:
            pass  # the service closed its end after the header: the rest never left this process
        reply = conn.recv()
        seconds = time.perf_counter() - start
        attacked_kb = _exit_peak_kb(service)
        assert isinstance(reply, _Failed) and isinstance(reply.exc, RequestTooLarge), reply
        with pytest.raises(RequestTooLarge, match=REFUSED):
            raise reply.exc
        assert seconds < 1.0, seconds  # measured: 0.02 s
        assert attacked_kb - control_kb < 16 * 1024, (control_kb, attacked_kb)  # the 200 MB never arrived
        assert service.pid != pid and service.restarts == 1  # serving again: a fresh process
        assert service.stats()["failures"] == 0
    finally:
        control.close()
        service.close()


_ATTACKER = """
import json, pickle, sys, time
from multiprocessing.connection import Client
address, authkey = json.loads(sys.stdin.read())
conn = Client(address, authkey=bytes.fromhex(authkey))
payload = pickle.dumps(("commit", ("x" * %d,)))
start, sent = time.perf_counter(), True
try:
    conn.send_bytes(payload)
except OSError:
    sent = False
reply = conn.recv_bytes()
seconds = time.perf_counter() - start  # the refusal is here; unpickling it imports dreamer_gym (0.6 s)
status, value = pickle.loads(reply)
print(json.dumps({"sent": sent, "status": status, "error": str(value), "seconds": seconds}))
"""


def test_a_200_mb_request_to_the_reward_host_is_refused_and_its_other_clients_are_served(env):
    """The host async vector envs share: a client (in its own process) sends 200 MB; the host reads its length,
    answers with the refusal and closes that client's connection; the host's memory stays put and another
    client is served."""
    service = ProcessRewardService(env.unwrapped.config)
    host = ServiceHost(service)
    try:
        honest = host.client()
        honest.public_pool()
        before_kb = _reset_peak(os.getpid())
        out = subprocess.run([sys.executable, "-c", _ATTACKER % BIG], input=json.dumps([host.address,
                             host.authkey.hex()]), capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        attack = json.loads(out.stdout)
        assert attack["status"] == "error" and "over the reward service's cap" in attack["error"], attack
        assert attack["seconds"] < 1.0, attack  # measured: under 0.01 s
        assert _peak_kb(os.getpid()) - before_kb < 16 * 1024, (before_kb, _peak_kb(os.getpid()))
        assert honest.stats()["failures"] == 0 and len(host.client().public_pool().banks) > 1  # still serving
    finally:
        host.close()
        service.close()


def test_an_honest_client_refuses_an_oversized_request_before_sending_and_the_service_goes_on(env):
    service = env.unwrapped.service
    pid, restarts = service.pid, service.restarts
    entry = MemoryEntry("procedure", "x" * (request_cap(service.config) + 1), FAMILY)
    with pytest.raises(RequestTooLarge, match=r"request refused before sending: commit is \d+ bytes pickled, over "
                                              r"the reward service's cap of \d+ bytes"):
        service.commit(CommitRequest(0, FAMILY, "0" * 32, (entry,)))
    assert service.pid == pid and service.restarts == restarts  # nothing was sent


def test_no_commit_the_tools_accept_comes_near_the_cap():
    """The largest commit the env's tools let a policy build: a full region of the windows pool (max_region_entries
    entries: no region is larger) kept whole, and max_emitted new entries each of max_entry_tokens *
    CHARS_PER_TOKEN four-byte letters citing 256 ranges. It is under commit_bytes (measured: 312 kB against
    1.23 MB), and COMMITS_PER_REQUEST of them fit the cap; a commit_many over the cap is split into requests that
    fit, in order."""
    assert CITED_RANGES == MAX_PROVENANCE
    windows = make_env("MemoryConsolidation-ScienceWorldWindows-v0")
    try:
        core = windows.unwrapped
        pool, config = core.pool, core.config
        _, info = windows.reset(seed=0, options={"bank": 0, "region": "window:14-17"})
        assert len(info["region"]) == config.max_region_entries  # a full region: none is larger
        windows.step(call("keep", ids=[e["id"] for e in info["region"]]))
        ranges = [{"trajectory_id": t, "start": a, "end": z} for t in sorted(core._ws.linked)
                  for a in range(len(pool.trajectories[t].steps)) for z in range(a, len(pool.trajectories[t].steps))]
        for k in range(config.max_emitted):
            text = chr(0x20000 + k) * (config.max_entry_tokens * 12)  # 4-byte letters: one token each word
            *_, step = windows.step(call("emit", kind="procedure", text=text,
                                         provenance=ranges[k * CITED_RANGES:(k + 1) * CITED_RANGES]))
            assert step["invalid_calls"] == 0, step["last_error"]
        core.act(call("commit"))
        worst = core.pending_commit
        assert len(worst.emitted) == config.max_region_entries + config.max_emitted
        size = len(pickle.dumps(("commit", (worst,))))
        assert size <= commit_bytes(config) and COMMITS_PER_REQUEST * size <= request_cap(config), size
        five = [pickle.loads(pickle.dumps(worst)) for _ in range(5)]  # copies that share no string to memoize
        batches = split_to_fit(five, 3 * size)  # a cap that fits two of them, with their framing
        assert len(batches) == 3 and [r for b in batches for r in b] == five  # in order, none lost
        assert all(len(pickle.dumps(("commit_many", (b,)))) <= 3 * size for b in batches)
    finally:
        windows.close()


@pytest.mark.jvm
def test_a_direct_commit_without_a_live_token_is_refused_and_the_episode_is_unchanged(env):
    """A policy that sends its own CommitRequest to ``env.unwrapped.service`` to preview a candidate."""
    family = "find-non-living-thing"  # short episodes (grow-plant's are the longest: CI time)
    options = {"bank": 0, "family": family}
    env.reset(seed=3, options=options)
    used = env.unwrapped._ticket.token
    _, expected, *_ = env.step(call("commit"))  # the episode's one commit
    obs, info = env.reset(seed=3, options=options)  # the same episode again: same region, same draw
    service = env.unwrapped.service
    other = next(f for f in sorted({e.family for e in env.unwrapped.pool.banks[0]}) if f != family)
    foreign = service.open(0, other, 3).token
    attacks = {"no token": ("", "not a live ticket"), "a forged token": ("0" * 32, "not a live ticket"),
               "a used token": (used, "not a live ticket"),
               "another region's token": (foreign, rf"issued for bank 0, family '{other}', not bank 0, family '{family}'")}
    for token, message in attacks.values():
        with pytest.raises(RewardServiceError, match=message):
            service.commit(CommitRequest(0, family, token, ()))
        with pytest.raises(RewardServiceError, match=message):  # in a batch too
            service.commit_many([CommitRequest(0, family, token, ())])
    assert env.unwrapped._ticket.token not in {used, foreign}
    _, reward, terminated, _, after = env.step(call("commit"))  # the env's episode goes on as if nothing happened
    assert terminated and reward == expected
    assert after["tool_calls_left"] == info["tool_calls_left"] - 1 and after["invalid_calls"] == 0


def _tiny_track(**changes: Any) -> Track:
    data = {**load_track("scienceworld").__dict__, "name": "tiny", "families": (FAMILY,), "banks": (0,),
            "eval_in_family": 1, "eval_other": 0, **changes}
    return Track(**data)


def _household_track() -> Track:
    """One region of the alfworld-gen track, one evaluation episode: a track run whose simulator needs no JVM (what
    the attackers below reach is the track's process service, the same whatever the suite)."""
    track = load_track("alfworld-gen")
    return Track(**{**track.__dict__, "name": "tiny-household", "families": track.families[:1], "banks": (0,),
                    "eval_in_family": 1, "eval_other": 0})


def test_a_track_service_opens_each_region_once_and_its_ledger_is_handed_out_once():
    track = _tiny_track()
    service = ProcessRewardService(track.config(), withhold=True)
    try:
        service.open(0, FAMILY, track.seed)
        with pytest.raises(RewardServiceError, match=rf"open refused: region \(bank 0, family '{FAMILY}'\) was opened "
                                                     "already in this track run"):
            service.open(0, FAMILY, track.seed + 1)  # a preview of the region on another draw
        for name in ("reset_ledger", "_ledger", "_sealed", "_tickets", "reopen"):
            with pytest.raises(RewardServiceError, match="not a reward-service operation"):
                raise _raw(service, (name, ()))
        assert service.finish() == []
        with pytest.raises(RewardServiceError, match="handed out once"):
            service.finish()
        with pytest.raises(RewardServiceError, match="no more commits"):
            service.open(0, "grow-plant", 0)
        service.close()
        with pytest.raises(RewardServiceError, match="closed or died; its ledger and tickets are gone"):
            service.open(0, "grow-plant", 0)  # a closed track service does not start again with a fresh ledger
    finally:
        service.close()


class _Attacker:
    """A consolidator that reaches the track's service through ``env.unwrapped.service``; ``how`` names the move."""

    name = "attacker"

    def __init__(self, how: str) -> None:
        self.how = how
        self.seen: dict[str, Any] = {}

    def actions(self, env: Any, obs: dict[str, Any], info: dict[str, Any]) -> Iterator[str]:
        core = env.unwrapped
        service, bank, family = core.service, info["bank"], info["family"]
        if self.how == "reopen":
            try:
                service.open(bank, family, 12345)
            except RewardServiceError as exc:
                self.seen["reopen"] = str(exc)
        elif self.how == "steal":  # commit a candidate with the env's own token, read what comes back
            self.seen["result"] = service.commit(CommitRequest(bank, family, core._ticket.token, ()))
        elif self.how == "off-track":  # a region the track does not visit: open it, commit a candidate there
            other = next(f for f in sorted({e.family for e in core.pool.banks[bank]}) if f != family)
            ticket = service.open(bank, other, 7)
            self.seen["result"] = service.commit(CommitRequest(bank, other, ticket.token, ()))
        elif self.how == "finish":
            self.seen["ledger"] = service.finish()
        yield call("commit")


@pytest.fixture(scope="module")
def track_cache(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The attacked track runs below share one evaluation cache (``store_path``, a free parameter): each run is a
    fresh track service with its own ledger and tickets, but an episode one run played is not played again (CI
    time; the cache is what verify's stages share too)."""
    return {"store_path": str(tmp_path_factory.mktemp("track-cache") / "episodes.sqlite")}


def test_a_policy_that_reopens_its_region_or_takes_the_ledger_early_gets_nothing(track_cache):
    track = _household_track()
    reopen = _Attacker("reopen")
    result = run_track(track, reopen, progress=False, **track_cache)  # refused, and the run goes on as the runner's
    assert "was opened already in this track run" in reopen.seen["reopen"] and len(result.records) == 1
    early = _Attacker("finish")
    with pytest.raises(RewardServiceError, match="no more commits"):  # the run is void, not scored
        run_track(track, early, progress=False, **track_cache)
    assert early.seen["ledger"] == []  # nothing was committed yet: no score to read


def test_a_commit_outside_the_runner_is_withheld_and_voids_the_run(track_cache):
    track = _household_track()
    steal = _Attacker("steal")
    with pytest.raises(RewardServiceError, match="not a live ticket"):  # the env's own commit finds its token used
        run_track(track, steal, progress=False, **track_cache)
    assert steal.seen["result"].reward is None and "score_after" not in steal.seen["result"].info
    off = _Attacker("off-track")
    with pytest.raises(RewardServiceError, match=r"ledger holds 2 commit\(s\) for the 1 region\(s\) the runner "
                                                 r"visited .*a commit was made outside the runner"):
        run_track(track, off, progress=False, **track_cache)
    assert off.seen["result"].reward is None and "episodes" not in off.seen["result"].info
