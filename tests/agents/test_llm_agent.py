"""The LLM downstream agent: lenient parsing, snapping onto valid actions, real episodes with the real
SmolLM2-135M on real ScienceWorld, and an LLM failure recorded as a failed episode."""
from __future__ import annotations

import pytest

from dreamer_gym.agents import AgentConfig, make_agent
from dreamer_gym.agents.llm_agent import LLMAgent, closest_action, parse_action
from dreamer_gym.evaluation import EvalEpisode, Evaluator
from dreamer_gym.memory import MemoryBank
from dreamer_gym.suites.base import EpisodeTask
from dreamer_gym.suites.scienceworld import ScienceWorldSuite

FAMILY = "use-thermometer"


@pytest.mark.parametrize(("reply", "action"), [
    ("Action: open door to kitchen", "open door to kitchen"),
    ("Sure! I think the best move is this.\nAction: `focus on thermometer`.", "focus on thermometer"),
    ("  go to kitchen\nbecause the task says so", "go to kitchen"),
    ('action = "Pick up  the Thermometer"!', "pick up the thermometer"),
    ("", ""),
])
def test_parse_action_reads_chatty_replies(reply: str, action: str) -> None:
    assert parse_action(reply) == action


@pytest.mark.parametrize(("reply", "action"), [
    ('Action: TYPE "JE4" into "Username"', 'type "JE4" into "Username"'),
    ('I will log in.\nAction: `Type "kEnDa x"  INTO "Username"`.', 'type "kEnDa x" into "Username"'),
    ('Action: **Click  "Submit"**', 'click "Submit"'),
    ('Click "Tab #2"!', 'click "Tab #2"'),
    ('Action: type "a \\"B\\"" into textbox 1', 'type "a \\"B\\"" into textbox 1'),
    ('Action: type "Two  Spaces." into "Field"', 'type "Two  Spaces." into "Field"'),
    ('Action: ANSWER "Quest Lumaflex Band"', 'answer "Quest Lumaflex Band"'),
    ('"`Open Door`"', "open door"),
    ("'Open Door'", "open door"),
    ('Open Door"', "open door"),
    ("Look at the Dog's bowl", "look at the dog's bowl"),
])
def test_parse_action_keeps_quoted_arguments_verbatim(reply: str, action: str) -> None:
    assert parse_action(reply) == action


def test_parsed_actions_are_the_web_action_language() -> None:
    from dreamer_gym.suites.web import Command, Target, parse_command

    assert parse_command(parse_action('Action: Type "JE4" into "Password".')) == Command(
        "type", Target(name="Password"), "JE4"
    )
    assert parse_command(parse_action('Action: select "Drona" in "Names"')) == Command(
        "select", Target(name="Names"), "Drona"
    )


def test_closest_action_snaps_free_text_onto_valid_actions() -> None:
    valid = ("focus on thermometer", "go to kitchen", "open door to kitchen", "look around")
    assert closest_action("go to the kitchen", valid) == "go to kitchen"
    assert closest_action("focus on the thermometer please", valid) == "focus on thermometer"
    assert closest_action("look around", valid) == "look around"
    assert closest_action("anything", ()) is None


def test_agent_config_validates_the_agent_name() -> None:
    with pytest.raises(ValueError, match="name"):
        AgentConfig(name="gpt")
    with pytest.raises(ValueError, match="llm"):
        AgentConfig(llm={"backend": "transformers"})  # type: ignore[arg-type]
    assert AgentConfig(name="llm").llm is not None  # the default model is filled in
    assert AgentConfig(name="llm", max_steps=5).key != AgentConfig(name="llm", max_steps=6).key


@pytest.fixture(scope="module")
def suite():
    with ScienceWorldSuite() as s:
        yield s


@pytest.mark.jvm
def test_llm_agent_plays_real_episodes_deterministically(suite, pool, smollm2_backend) -> None:
    agent = LLMAgent(AgentConfig(name="llm", max_steps=2), backend=smollm2_backend)  # 2 steps: issue 39 (CI time)
    task = EpisodeTask(FAMILY, pool.variations(FAMILY, "dev")[0])
    suite.start(task)
    entries = agent.retrieve(suite.task_description(), pool.banks[0].entries)
    assert entries and len(entries) <= agent.config.top_k
    first = agent.play(suite, task, entries)
    second = agent.play(suite, task, entries)
    assert first == second  # greedy decoding: the evaluation cache may rely on it
    assert 1 <= first.steps <= 2 and len(first.actions) == first.steps
    assert 0.0 <= first.score <= 100.0 and first.error is None
    # every action it took was one the simulator accepts (snapped if the model's text was not)
    assert all(a and a == a.lower() for a in first.actions)


@pytest.mark.jvm
def test_llm_failure_is_a_recorded_failed_episode_not_a_crash(pool) -> None:
    """The agent's server is unreachable: the evaluator records the error and does not cache it."""
    config = AgentConfig(name="llm", max_steps=3,
                         llm={"backend": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m",
                              "timeout_s": 2.0, "retries": 0})
    evaluator = Evaluator(agent_config=config)
    try:
        task = EpisodeTask(FAMILY, pool.variations(FAMILY, "dev")[0])
        episode = EvalEpisode(task, pool.description(task, "dev"))
        [result] = evaluator.evaluate(MemoryBank(pool.banks[0].entries), [episode])
        assert result.error is not None and "LLMError" in result.error and result.score == 0.0
        assert evaluator.stats.failures == 1
        [again] = evaluator.evaluate(MemoryBank(pool.banks[0].entries), [episode])
        assert again.error is not None  # failures are never served from the cache
    finally:
        evaluator.close()


def test_make_agent_builds_the_llm_agent_lazily() -> None:
    agent = make_agent(AgentConfig(name="llm"))
    assert isinstance(agent, LLMAgent) and agent._backend is None  # no model loaded until the first episode
    assert agent.cache_key != make_agent(AgentConfig()).cache_key


@pytest.mark.alfworld
@pytest.mark.browser
@pytest.mark.heavy  # ~55 s (issue 39: CI time); tests/envs/test_llm_env.py plays the LLM agent on both suites in CI
@pytest.mark.parametrize("suite_name", ["alfworld-gen", "miniwob"])
def test_llm_agent_speaks_each_held_out_suite(suite_name, smollm2_backend, tmp_path) -> None:
    """The real SmolLM2 agent plays a real ALFWorld-engine game and a real MiniWoB page with that suite's
    command words in its system prompt; whatever it writes ends as actions the suite answered."""
    from dreamer_gym.suites import get_suite_spec, make_suite

    kwargs = {"cache_dir": tmp_path} if suite_name == "alfworld-gen" else {}
    family = "pick_clean_then_place_in_recep" if suite_name == "alfworld-gen" else "click-button"
    agent = LLMAgent(AgentConfig(name="llm", max_steps=3), backend=smollm2_backend)
    with make_suite(suite_name, **kwargs) as s:  # type: ignore[attr-defined]
        task = EpisodeTask(family, 1000)
        prompt = None
        s.start(task)
        prompt = agent.prompt(s.task_description(), [], [], "obs", get_suite_spec(suite_name).system_prompt())
        result = agent.play(s, task, [])
        assert agent.play(s, task, []) == result  # greedy: deterministic
    words = ("take OBJECT from RECEPTACLE",) if suite_name == "alfworld-gen" else ('type "TEXT" into "FIELD"',)
    assert all(w in prompt[0]["content"] for w in words)
    assert 1 <= result.steps <= 3 and result.error is None and 0.0 <= result.score <= 100.0
