"""MiniWoB++ through BrowserGym: one text procedure, reused across seeds, in a real headless Chromium.

Run: python docs/examples/miniwob_quickstart.py   (a test runs this file; needs `make setup`)
"""

from dreamer_gym.suites import make_suite
from dreamer_gym.suites.base import EpisodeTask

with make_suite("miniwob") as suite:  # the browser starts at the first start() and stops at the end
    for seed in suite.variations("login-user", "dev")[:2]:
        task = EpisodeTask("login-user", seed)
        page = suite.start(task)
        goal = suite.task_description()  # 'Enter the username "kenda" and the password "JE4" into ...'
        print(goal)
        print(page)  # page: Login User Task / [16] textbox 1 "Username" value="" / ... / [20] button "Login"

        # A bad action is an observation, never an exception.
        print(suite.step('click "Sign in"').observation.splitlines()[0])

        # The same procedure works on every seed: elements are named, not numbered.
        user, password = goal.split('"')[1], goal.split('"')[3]
        for action in (f'type "{user}" into "Username"', f'type "{password}" into "Password"', 'click "Login"'):
            outcome = suite.step(action)
        print(f"seed {seed}: score {outcome.score:.0f}, done {outcome.done}, gold path {suite.gold_path(task)}")
