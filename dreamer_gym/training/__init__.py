"""What the training methods share, and the table of them: :data:`ALGORITHMS` (``dreamer-gym train --algo NAME``;
add yours with :func:`register_algorithm` or an entry point in ``dreamer_gym.algorithms``), the run logs
(:mod:`~dreamer_gym.training.logs`) and the learning-signal checks (:mod:`~dreamer_gym.training.learning_signal`).
The methods themselves live in :mod:`dreamer_gym.methods` (GRPO, op-level)."""
from dreamer_gym.training.algorithms import ALGORITHMS, Algorithm, TrainOptions, get_algorithm, register_algorithm

__all__ = ["ALGORITHMS", "Algorithm", "TrainOptions", "get_algorithm", "register_algorithm"]
