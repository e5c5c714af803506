"""``python -m dreamer_gym.service.service_main READ_FD WRITE_FD``: the reward service process (started by
:class:`~dreamer_gym.service.services.ProcessRewardService`, never by hand)."""
from __future__ import annotations

import sys

from dreamer_gym.service.services import _Duplex, serve

if __name__ == "__main__":
    serve(_Duplex(int(sys.argv[1]), int(sys.argv[2])))  # type: ignore[arg-type]
