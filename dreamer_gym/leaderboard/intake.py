"""Bounded, clean input: what a submission file may be before any check reads its meaning.

A submission is data from someone who may want it to break the board. Each bound here is checked before the
schema and long before a re-score, and each refusal is one line: the file's size (checked on disk, before a
byte is read), UTF-8, JSON, nesting depth, and finite numbers everywhere (``NaN`` in a free-form ``config``
used to pass the schema and crash the results file after a full re-score).
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from dreamer_gym.errors import DreamerGymError

class SubmissionError(DreamerGymError, ValueError):
    """A submission is rejected; the message names the field (as a JSON path) and what was expected. Defined
    here, with the first refusals, and re-exported by :mod:`~dreamer_gym.leaderboard.submission`."""


MAX_BYTES = 20 * 2**20  # the largest committed submission is ~160 KB; 20 MB leaves room for long call logs
MAX_DEPTH = 32  # a submission's own structure is ~10 levels deep; a free-form `config` gets the rest


def _not_finite(token: str) -> float:
    raise SubmissionError(f"a number that is not finite ({token}); JSON numbers on the board are finite")


def _finite_float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        _not_finite(token)
    return value


def read_json(path: Path) -> Any:
    """``path`` parsed, or a one-line :class:`SubmissionError`: too big (checked before reading), not UTF-8,
    not JSON, nested too deep, or a non-finite number."""
    if not path.is_file():
        raise SubmissionError(f"no submission file {str(path)!r}")
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise SubmissionError(f"{path}: {size} bytes; a submission is at most {MAX_BYTES} bytes (20 MB), not read")
    with path.open("rb") as f:
        raw = f.read(MAX_BYTES + 1)  # a file that grew after the stat still stops here
    if len(raw) > MAX_BYTES:
        raise SubmissionError(f"{path}: over {MAX_BYTES} bytes (20 MB), not read further")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SubmissionError(f"{path}: not UTF-8 (byte {raw[exc.start]:#04x} at offset {exc.start}); save the file "
                              "as UTF-8") from None
    try:
        data = json.loads(text, parse_constant=_not_finite, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise SubmissionError(f"{path}: not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise SubmissionError(f"{path}: nested deeper than {MAX_DEPTH} levels") from None
    except SubmissionError as exc:
        raise SubmissionError(f"{path}: {exc}") from None
    except ValueError as exc:  # an integer past Python's digit limit
        raise SubmissionError(f"{path}: not a number JSON can hold here ({str(exc).splitlines()[0]})") from None
    check_clean(data)
    return data


def check_clean(data: Any) -> None:
    """Depth at most :data:`MAX_DEPTH`, string keys, and no NaN or infinity anywhere (a submission handed over as
    Python objects gets the same bounds as a file). Iterative: a deep object cannot overflow the check."""
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        node, where, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise SubmissionError(f"`{where or '(the submission)'}`: nested deeper than {MAX_DEPTH} levels")
        if isinstance(node, float) and not math.isfinite(node):
            raise SubmissionError(f"`{where}`: {node} is not a finite number; JSON numbers on the board are finite")
        if isinstance(node, dict):
            for key, value in node.items():
                if not isinstance(key, str):
                    raise SubmissionError(f"`{where}`: key {key!r} is not a string")
                stack.append((value, f"{where}.{key}" if where else key, depth + 1))
        elif isinstance(node, list):
            stack.extend((value, f"{where}[{k}]", depth + 1) for k, value in enumerate(node))
