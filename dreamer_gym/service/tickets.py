"""Who may commit what: the episode tickets a reward service issues at reset, and the seeds it derives.

A commit is accepted only with a live token the service issued for that reset (``open``), once; the token
binds the bank, the family and the evaluation seed, so a policy cannot score a candidate bank on a region
or a draw of its own choosing (a preview), nor twice. A withholding (track) service also opens each region
at most once per run, so its ledger holds at most one commit per region.

The evaluation seed is derived here, in the service, from the seed the env sends at reset: the seed itself
when the service has no secret (training ids, the re-scored tier: the same reset gives the same episodes as
before tokens existed, and the evaluation cache keeps its hits), an HMAC of it under the secret otherwise
(a verification run: the episodes cannot be predicted from the public seeds).
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from dreamer_gym.errors import RewardServiceError
from dreamer_gym.service.messages import EpisodeTicket

MAX_LIVE_TICKETS = 100_000  # training resets that never commit would otherwise grow the book without end


def derive_episode_seed(seed: int, secret: str | bytes | None) -> int:
    """The evaluation seed of a reset ``seed``: ``seed`` itself without a secret, else a 63-bit HMAC-SHA256 of
    it under ``secret``.

    Example:
        >>> derive_episode_seed(7, None)
        7
        >>> derive_episode_seed(7, "s") == derive_episode_seed(7, "s") != derive_episode_seed(7, "t")
        True
    """
    if secret is None:
        return int(seed)
    key = secret.encode() if isinstance(secret, str) else bytes(secret)
    digest = hmac.new(key, str(int(seed)).encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") >> 1


@dataclass(frozen=True)
class _Binding:
    bank_index: int
    family: str
    seed: int  # the derived evaluation seed (never sent to the policy's side)


class TicketBook:
    """The live tickets of one service. ``withhold``: each (bank, family) region opens once per run."""

    def __init__(self, secret: str | bytes | None = None, withhold: bool = False) -> None:
        self._secret = secret
        self._withhold = withhold
        self._live: OrderedDict[str, _Binding] = OrderedDict()
        self._opened: set[tuple[int, str]] = set()

    def open(self, bank_index: int, family: str, seed: int, token: str | None = None) -> EpisodeTicket:
        """Issue a ticket for one episode on region (``bank_index``, ``family``) drawn from reset ``seed``
        (the caller checked the region exists). ``token``: re-issue a known one (a restarted service)."""
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise RewardServiceError(f"open: `seed` must be an int, got {type(seed).__name__}")
        region = (int(bank_index), str(family))
        if self._withhold and region in self._opened:
            raise RewardServiceError(f"open refused: region (bank {region[0]}, family {region[1]!r}) was opened "
                                     "already in this track run; a track opens each region once")
        self._opened.add(region)
        token = token or secrets.token_hex(16)
        self._live[token] = _Binding(region[0], region[1], derive_episode_seed(int(seed), self._secret))
        while len(self._live) > MAX_LIVE_TICKETS:
            self._live.popitem(last=False)
        return EpisodeTicket(token, region[0], region[1])

    def check(self, bank_index: int, family: str, token: object) -> int:
        """The derived seed of a commit on (``bank_index``, ``family``) carrying ``token``; raises unless the
        token is live and issued for that region. Consumes nothing (see :meth:`spend`)."""
        binding = self._live.get(token) if isinstance(token, str) else None
        if binding is None:
            raise RewardServiceError("commit refused: its token is not a live ticket of this service (none, "
                                     "already used, or never issued); a commit carries the token `open` issued "
                                     "at this episode's reset, once")
        if (binding.bank_index, binding.family) != (bank_index, family):
            raise RewardServiceError(f"commit refused: its token was issued for bank {binding.bank_index}, family "
                                     f"{binding.family!r}, not bank {bank_index!r}, family {family!r}")
        return binding.seed

    def spend(self, tokens: list[str]) -> None:
        """Retire ``tokens`` (checked with :meth:`check`): each commits once."""
        if len(set(tokens)) != len(tokens):
            raise RewardServiceError("commit refused: one token is carried by two requests of a batch; a ticket "
                                     "commits once")
        for token in tokens:
            del self._live[token]
