"""sb3-contrib's ``MaskablePPO`` on :class:`~dreamer_gym.envs.oplevel.OpLevelWrapper`, unchanged.

The same training regions as the op-level trainer (:class:`~dreamer_gym.envs.oplevel.RegionSeeds` over
``region_seeds``), SB3's own rollout buffer and vectorisation (``n_envs`` > 1 uses SB3's ``SubprocVecEnv``:
one env, one JVM and one reward service per process). ``n_steps`` is sized for ~1-5 s commits: one update
per ``n_steps * n_envs`` commits. ``dreamer-gym train --algo sb3 --config F`` runs it; the saved model plays
as the consolidator ``sb3:PATH``.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import yaml

from dreamer_gym.errors import ConfigError
from dreamer_gym.training.oplevel import RegionRunConfig

MODEL_FILE = "maskable_ppo.zip"


@dataclass(frozen=True)
class SB3Config(RegionRunConfig):
    """One MaskablePPO run; ``baselines/configs/sb3-*.yaml`` hold these fields."""

    total_timesteps: int = 96
    n_steps: int = 16
    batch_size: int = 16
    n_epochs: int = 4
    learning_rate: float = 3e-4
    ent_coef: float = 0.01
    n_envs: int = 1
    output_dir: str = "runs/sb3-oplevel"


def make_oplevel_env(config: SB3Config, rank: int = 0) -> gym.Env:
    import dreamer_gym  # noqa: F401 - registers the ids in a subprocess
    from dreamer_gym.envs.oplevel import OpLevelWrapper, RegionSeeds

    env = OpLevelWrapper(gym.make(config.env_id, **config.env_overrides))
    return RegionSeeds(env, config.region_seeds, seed=config.seed + rank)


def train_maskable_ppo(config: SB3Config, progress: bool = True) -> Path:
    """Train, save ``output_dir/maskable_ppo.zip`` and a JSONL of per-episode rewards; return the model path."""
    try:
        from sb3_contrib import MaskablePPO
        from stable_baselines3.common.callbacks import BaseCallback
        from stable_baselines3.common.env_util import make_vec_env
        from stable_baselines3.common.vec_env import SubprocVecEnv
    except ImportError as exc:
        raise ConfigError("--algo sb3 needs the sb3 extra: pip install -e '.[sb3]'") from exc

    out = Path(config.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.yaml").write_text(yaml.safe_dump(config.to_dict(), sort_keys=False))
    log = (out / "log.jsonl").open("w")

    class EpisodeLog(BaseCallback):
        def _on_step(self) -> bool:
            for info, reward in zip(self.locals["infos"], self.locals["rewards"]):
                log.write(json.dumps({"timestep": self.num_timesteps, "reward": float(reward), "family": info["family"],
                                      "ops_played": info.get("ops_played", {}), "time": time.time()}) + "\n")
            log.flush()
            return True

    vec_cls = SubprocVecEnv if config.n_envs > 1 else None
    env = make_vec_env(lambda: make_oplevel_env(config), n_envs=config.n_envs, seed=config.seed, vec_env_cls=vec_cls)
    try:
        model = MaskablePPO("MlpPolicy", env, n_steps=config.n_steps, batch_size=config.batch_size,
                            n_epochs=config.n_epochs, learning_rate=config.learning_rate, ent_coef=config.ent_coef,
                            seed=config.seed, device="cpu")
        model.learn(total_timesteps=config.total_timesteps, callback=EpisodeLog(), progress_bar=False)
        model.save(out / MODEL_FILE)
    finally:
        log.close()
        env.close()
    return out / MODEL_FILE
