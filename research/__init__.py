"""The lab: research studies run on the benchmark, and their recorded results (research/README.md). Not installed:
run from the repository root, ``python -m research.llm_study``."""
