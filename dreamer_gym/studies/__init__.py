"""Studies a user runs as commands on their own consolidator: the reward-validity study
(:mod:`dreamer_gym.studies.validity`, ``dreamer-gym validity``) and its power analysis
(:mod:`dreamer_gym.studies.power`, ``dreamer-gym power``), and the learnability study
(:mod:`dreamer_gym.studies.learnability`, ``dreamer-gym learnability``: can a region-dependent choice among fixed
rules beat the best constant, cross-fitted). The lab's studies (the LLM study, cooperation, the
op-level ceiling, rule choice) live in the repository's ``research/`` folder, which is not installed.
Imported by module; nothing here is imported by the package."""
