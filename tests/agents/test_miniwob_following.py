"""The memory-following agent on MiniWoB++ (real Chromium through BrowserGym): parameters come from a
procedure's own goal; its score moves with what memory says."""
from __future__ import annotations

import pytest

from dreamer_gym.agents import AgentConfig, MemoryFollowingAgent
from dreamer_gym.agents.miniwob_following import MiniWoBFollowing, bind, clauses, extract_steps, split_head, template
from dreamer_gym.consolidators.oracle import as_prose
from dreamer_gym.memory import MemoryEntry, Provenance
from dreamer_gym.suites.base import EpisodeTask
from dreamer_gym.suites.miniwob import PROCEDURES

PROV = (Provenance("t0", 0, 1),)


def procedure(text: str, family: str = "f") -> MemoryEntry:
    return MemoryEntry("procedure", text, family, (), PROV, 0)


def test_clauses_never_cut_inside_quotes():
    assert clauses('type "a, b. c" into textbox 1, click "Submit". Then press "Enter"') == [
        'type "a, b. c" into textbox 1', 'click "Submit"', 'press "Enter"']


def test_head_and_steps_in_list_and_prose_form():
    goal, steps = PROCEDURES["login-user"].goal, PROCEDURES["login-user"].steps
    listed = split_head(f"To {goal}: {steps}.")
    prose = split_head(f"To {goal}. " + as_prose(steps))
    assert listed[0] == prose[0] == goal
    assert extract_steps(listed[1]) == extract_steps(prose[1]) == [
        'type "<username>" into "Username"', 'type "<password>" into "Password"', 'click "Login"']


def test_slots_and_quoted_values_are_parameters():
    pattern, names = template("Select <items> and click Submit")
    m = pattern.match("Select Jc, s6WcI and XMHY and click Submit.")
    assert m is not None and names == ["<items>"]
    assert bind(["check each of <items>", 'click "Submit"'], dict(zip(names, m.groups()))) == [
        'check "Jc"', 'check "s6WcI"', 'check "XMHY"', 'click "Submit"']
    pattern, names = template('Enter "Myron" into the text field and press Submit')
    m = pattern.match('Enter "Kanesha" into the text field and press Submit.')
    assert m is not None
    assert bind(['type "Myron" into textbox 1', 'click "Submit"'], dict(zip(names, m.groups()))) == [
        'type "Kanesha" into textbox 1', 'click "Submit"']


def test_unquoted_verbatim_values_are_not_parameters():
    """"Select Nb and click Submit" fits only that very goal: its first procedure is followed as written."""
    plan = MiniWoBFollowing.plan("Select Jc and click Submit.", [procedure('To Select Nb and click Submit: check "Nb", click "Submit".')])
    assert plan == ['check "Nb"', 'click "Submit"']


@pytest.fixture(scope="module")
def suite():
    from dreamer_gym.suites import make_suite

    s = make_suite("miniwob")
    yield s
    s.close()


@pytest.mark.browser
@pytest.mark.parametrize("family", ["click-checkboxes", "login-user", "choose-list"])
def test_score_moves_with_memory(suite, family):
    agent = MemoryFollowingAgent(AgentConfig(max_steps=10))
    task = EpisodeTask(family, 1000)
    goal, steps = PROCEDURES[family].goal, PROCEDURES[family].steps
    assert agent.play(suite, task, []).score == 0.0
    listed = agent.play(suite, task, [procedure(f"To {goal}: {steps}.", family)])
    prose = agent.play(suite, task, [procedure(f"To {goal}. " + as_prose(steps), family)])
    assert listed.score == 100.0 and listed.success
    assert prose.actions == listed.actions
    other = PROCEDURES["focus-text"].steps
    assert agent.play(suite, task, [procedure(f"To {goal}: {other}.", family)]).score == 0.0


@pytest.mark.browser
def test_innate_click_on_a_quoted_name(suite):
    """Without memory the agent still clicks what the goal quotes: click-button needs no memory."""
    result = MemoryFollowingAgent(AgentConfig(max_steps=10)).play(suite, EpisodeTask("click-button", 1000), [])
    assert result.score == 100.0 and len(result.actions) == 1
