"""The registered env ids, re-exported: they live in :mod:`dreamer_gym.contract.ids` (issue 28).

Import from there; this path stays for one version (it goes in 0.3)."""
from dreamer_gym.contract.ids import (
    ALFWORLD,
    ALFWORLD_GEN,
    ALFWORLD_GEN_POOL_HASH,
    DEFAULT_FAMILIES,
    ENV_IDS,
    FROZEN_FIELDS,
    LATEST_IDS,
    LLM_VARIANTS,
    MINIWOB,
    MINIWOB_POOL_HASH,
    REGISTERED,
    SCIENCEWORLD,
    SCIENCEWORLD_POOL_HASH,
    SUPERSEDED,
    TRANSFER_TRACK,
    WEBARENA,
    EnvIdSpec,
)

__all__ = ["ALFWORLD", "ALFWORLD_GEN", "ALFWORLD_GEN_POOL_HASH", "DEFAULT_FAMILIES", "ENV_IDS", "FROZEN_FIELDS",
           "LATEST_IDS", "LLM_VARIANTS", "MINIWOB", "MINIWOB_POOL_HASH", "REGISTERED", "SCIENCEWORLD",
           "SCIENCEWORLD_POOL_HASH", "SUPERSEDED", "TRANSFER_TRACK", "WEBARENA", "EnvIdSpec"]
