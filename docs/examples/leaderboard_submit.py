"""A leaderboard submission end to end, in small: run a consolidator on a track, write the submission (its
committed banks, not a score), then validate it as the board does (checks, then a re-score), and render.

The same loop from the command line, on the shipped try-out track (4 regions, a minute a command, never ranked):
`dreamer-gym leaderboard submit --consolidator NAME --track tryout`, then `dreamer-gym leaderboard validate
leaderboards/submissions/NAME.json` and `dreamer-gym leaderboard render` (docs/start-submitter.md). Here the
shipped `scienceworld` track is cut in code to one family and two banks, and handed to `validate` as an extra
track, as `validate --track FILE` does with a track file.

Run: python docs/examples/leaderboard_submit.py [BANKS]   (BANKS: how many banks, 2 if not given; a test runs this
file with 1)
"""
import copy
import json
import sys
import tempfile
from pathlib import Path

from dreamer_gym.consolidators import make_consolidator
from dreamer_gym.leaderboard import Track, load_track
from dreamer_gym.leaderboard.render import render
from dreamer_gym.leaderboard.submission import (
    SubmissionError,
    build_submission,
    consolidator_block,
    dumps,
    run_for_submission,
)
from dreamer_gym.leaderboard.validate import validate

banks = tuple(range(int(sys.argv[1]) if len(sys.argv) > 1 else 2))
small = Track(**{**load_track("scienceworld").__dict__, "name": "scienceworld-small",
                 "families": ("lifespan-longest-lived",), "banks": banks, "eval_in_family": 2, "eval_other": 1})
tracks = {small.name: small}  # the board knows the shipped tracks; this one is added for the example

result = run_for_submission(small, make_consolidator("dedupe"), progress=False)  # keeps the calls the board replays
submission = json.loads(dumps(build_submission(consolidator_block("dedupe", kind="fixed"), [(small, result)])))
print("claimed score:", submission["tracks"][0]["claimed"]["score"])

with tempfile.TemporaryDirectory() as out:
    # the board's re-score fills an evaluation cache (`validate --cache DIR`): validating the same banks again, as
    # the tampered copy below does, is served from it (a cached episode is the same result as a played one)
    cache = Path(out) / "cache"
    [record] = validate(copy.deepcopy(submission), extra_tracks=tracks, progress=False, cache=cache)
    print("re-scored:", record["summary"]["score"], "tier:", record["tier"])

    tampered = copy.deepcopy(submission)
    tampered["tracks"][0]["regions"][0]["claimed"]["score_after"] += 5.0
    try:
        validate(tampered, extra_tracks=tracks, progress=False, cache=cache)
    except SubmissionError as exc:
        print("rejected:", exc)

    (Path(out) / "results" / small.name).mkdir(parents=True)
    (Path(out) / "results" / small.name / "dedupe.json").write_text(dumps(record))
    readme, page = render(Path(out) / "results", Path(out))
    # a track the package does not ship is listed apart with its score, never ranked (docs/leaderboard.md)
    print(readme.read_text().split("### Not ranked")[1][:600])
