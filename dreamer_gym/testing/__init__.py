"""Conformance checks for every piece a user can write and plug in, shipped as ``pettingzoo.test`` ships its
API tests: run the check on your piece before you register it; our tests run it on ours.

* :func:`check_suite`: a task suite (its spec and adapter);
* :func:`check_consolidator`: a consolidator policy, on a real env;
* :func:`check_executor`: an evaluation executor;
* :func:`check_backend`: an LLM backend (greedy determinism, samples, stop strings, limits, logprobs, JSON);
* :func:`check_agent`: a downstream agent (retrieval from the given bank only, results in range, determinism);
* :func:`check_service`: a reward service (keep-all pays 0.0, the same request the same reward, failures typed).

Each raises an error that names the piece, the property it breaks and what came, and returns a report
otherwise. This package sits above everything it checks (issue 28): nothing below imports it.
"""
from dreamer_gym.testing.agent_check import AgentCheckError, AgentReport, check_agent
from dreamer_gym.testing.backend_check import BackendCheckError, BackendReport, check_backend
from dreamer_gym.testing.consolidator_check import ConsolidatorCheckError, ConsolidatorReport, check_consolidator
from dreamer_gym.testing.executor_check import ExecutorCheckError, check_executor
from dreamer_gym.testing.service_check import ServiceCheckError, ServiceReport, check_service
from dreamer_gym.testing.suite_check import SuiteCheckError, SuiteReport, check_suite

__all__ = [
    "AgentCheckError", "AgentReport", "BackendCheckError", "BackendReport", "ConsolidatorCheckError",
    "ConsolidatorReport", "ExecutorCheckError", "ServiceCheckError", "ServiceReport", "SuiteCheckError",
    "SuiteReport", "check_agent", "check_backend", "check_consolidator", "check_executor", "check_service",
    "check_suite",
]
