"""sb3-contrib's ``MaskablePPO`` on :class:`~dreamer_gym.methods.oplevel.wrapper.OpLevelWrapper`, unchanged.

The same training regions as the op-level trainer (:class:`~dreamer_gym.methods.oplevel.wrapper.RegionSeeds` over
``region_seeds``), SB3's own rollout buffer and vectorisation (``n_envs`` > 1 uses SB3's ``SubprocVecEnv``:
one env, one JVM and one reward service per process). ``n_steps`` is sized for ~1-5 s commits: one update
per ``n_steps * n_envs`` commits. ``dreamer-gym train --algo sb3 --config F`` runs it; the saved model plays
as the consolidator ``sb3:PATH``.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import gymnasium as gym
import yaml

from dreamer_gym.errors import ConfigError
from dreamer_gym.methods.oplevel.config import RegionRunConfig
from dreamer_gym.training.algorithms import TrainOptions
from dreamer_gym.training.learning_signal import check_batch

MODEL_FILE = "maskable_ppo.zip"


@dataclass(frozen=True)
class SB3Config(RegionRunConfig):
    """One MaskablePPO run; ``dreamer_gym/data/configs/sb3-*.yaml`` hold these fields."""

    total_timesteps: int = field(default=96, metadata={"help": "commits to train on (one op-level step each)"})
    n_steps: int = field(default=16, metadata={"help": "commits per env between updates"})
    batch_size: int = field(default=16, metadata={"help": "PPO minibatch size"})
    n_epochs: int = field(default=4, metadata={"help": "PPO epochs per update"})
    learning_rate: float = field(default=3e-4, metadata={"help": "Adam learning rate"})
    ent_coef: float = field(default=0.01, metadata={"help": "entropy bonus"})
    n_envs: int = field(default=1, metadata={"help": "envs (> 1: SB3's SubprocVecEnv, one JVM each)"})
    output_dir: str = field(default="runs/sb3-oplevel", metadata={"help": "the model and log.jsonl"})


def make_oplevel_env(config: SB3Config, rank: int = 0) -> gym.Env:
    import dreamer_gym  # noqa: F401 - registers the ids in a subprocess
    from dreamer_gym.methods.oplevel.wrapper import OpLevelWrapper, RegionSeeds

    env = OpLevelWrapper(config.make_env())
    return RegionSeeds(env, config.region_seeds, seed=config.seed + rank)


def train_maskable_ppo(config: SB3Config, progress: bool = True) -> Path:
    """Train, save ``output_dir/maskable_ppo.zip`` and a JSONL of per-episode rewards (and a line with a
    ``warning`` key for each rollout without reward spread); return the model path. ``progress``: a bar over
    the commits with the last and mean reward (stderr)."""
    from tqdm.auto import tqdm

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
        """Each commit (one op-level step is one episode) to the log and the bar; each rollout's rewards to
        :func:`check_batch` (a rollout whose commits all paid the same gives PPO nothing to learn from)."""

        def __init__(self) -> None:
            super().__init__()
            self.bar = tqdm(total=config.total_timesteps, desc="sb3 maskable-ppo", unit="commit", disable=not progress)
            self.rewards: list[float] = []
            self.rollouts = 0

        def _on_step(self) -> bool:
            for info, reward in zip(self.locals["infos"], self.locals["rewards"]):
                log.write(json.dumps({"timestep": self.num_timesteps, "reward": float(reward), "family": info["family"],
                                      "ops_played": info.get("ops_played", {}), "time": time.time()}) + "\n")
                self.rewards.append(float(reward))
            log.flush()
            self.bar.update(len(self.locals["rewards"]))
            self.bar.set_postfix(reward=f"{self.rewards[-1]:+.3f}", mean=f"{sum(self.rewards) / len(self.rewards):+.3f}")
            return True

        def _on_rollout_end(self) -> None:
            self.rollouts += 1
            buffer = self.model.rollout_buffer.rewards  # (n_steps, n_envs): this rollout's commits
            signal = check_batch(buffer.ravel().tolist(), where=f"sb3 rollout {self.rollouts}")
            for message in signal.warnings:
                log.write(json.dumps({"timestep": self.num_timesteps, "warning": message}) + "\n")

        def _on_training_end(self) -> None:
            self.bar.close()

    vec_cls = SubprocVecEnv if config.n_envs > 1 else None
    env = make_vec_env(lambda: make_oplevel_env(config), n_envs=config.n_envs, seed=config.seed, vec_env_cls=vec_cls)
    try:
        model = MaskablePPO("MlpPolicy", env, n_steps=config.n_steps, batch_size=config.batch_size,
                            n_epochs=config.n_epochs, learning_rate=config.learning_rate, ent_coef=config.ent_coef,
                            seed=config.seed, device="cpu")
        # our bar, not SB3's progress_bar (that one needs rich, and counts timesteps without the reward)
        model.learn(total_timesteps=config.total_timesteps, callback=EpisodeLog(), progress_bar=False)
        model.save(out / f".part-{MODEL_FILE}")  # renamed when whole: an interrupted save leaves no half a model
        os.replace(out / f".part-{MODEL_FILE}", out / MODEL_FILE)
    finally:
        log.close()
        env.close()
    return out / MODEL_FILE


def run(config: SB3Config, options: TrainOptions) -> int:
    """``dreamer-gym train --algo sb3``: train and print the saved model's path (``sb3:PATH`` plays it)."""
    print(f"model: {train_maskable_ppo(config, progress=not options.quiet)}")
    return 0
