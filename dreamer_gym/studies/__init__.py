"""Studies run on the benchmark itself: the reward-validity study (:mod:`dreamer_gym.studies.validity`,
``dreamer-gym validity``) and what a small LLM does on both sides (:mod:`dreamer_gym.studies.llm_study`,
``python -m dreamer_gym.studies.llm_study``). Imported by module; nothing here is imported by the package."""
