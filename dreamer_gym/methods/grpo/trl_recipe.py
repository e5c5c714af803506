"""One YAML recipe -> a ready ``trl.GRPOTrainer`` on a ``MemoryConsolidation-*`` id, by either of TRL's two paths.

**path: tools** (:mod:`.trl_env`): ``GRPOTrainer(environment_factory=...)``. The model is a tool-calling chat model
(Qwen2.5/Qwen3 style); TRL renders the env's tools (``read_entry``, ``keep``, ``emit``, ``commit``, ...) into the
prompt, parses each reply's tool calls, runs them on one :class:`.trl_env.ConsolidationToolEnv` per rollout and
appends the results (loss-masked) until the model stops calling tools or ``max_tool_calling_iterations`` runs out;
:func:`.trl_env.commit_reward` then scores the batch's commits in one ``commit_many`` call. Generation can use vLLM
(``use_vllm``, colocate or server): the path for GPU runs of real chat models.

**path: text** (:mod:`.trl_bridge`): ``GRPOTrainer(rollout_func=...)``. The rollouts are :mod:`.rollout`'s: the
trainer's own model writes our command grammar (``keep 03 07``, ...), grammar-constrained, one turn per command;
TRL gets the token ids, the ``env_mask`` and the env's rewards. For models without a tool-calling template
(SmolLM2) and for CPU runs; no vLLM (the recipe refuses ``use_vllm`` there, see :mod:`.trl_bridge`).

**Why the tools path needs a recognised template.** TRL (1.16) turns generated text into tool calls with
``tokenizer.parse_response``, which needs a response template on the tokenizer. Unless the tokenizer ships one,
``add_response_schema`` sets it, and only for chat templates it recognises, by *exact string equality* with the
templates it ships in ``trl/chat_templates/*.jinja`` (Qwen2.5, Qwen3, Llama 3.1/3.2, GLM-4 MoE, GPT-OSS, ...);
anything else raises "Unrecognized chat template". The template must also render a whole tool exchange
(``supports_tool_calling``), and, when it is not prefix-preserving (Qwen3's is not), TRL swaps in its
``*_training.jinja`` variant for multi-turn generation. ``model.chat_template: NAME`` therefore installs TRL's own
``trl/chat_templates/NAME.jinja`` (e.g. ``qwen3``) on the tokenizer, byte for byte, so any model whose tokenizer has
the template's special tokens (``<|im_start|>``/``<|im_end|>`` for the Qwen ones; SmolLM2's has them) can take the
tools path. Whether the model *uses* the tools well is another matter: a model never trained on that format rarely
emits a parseable call, so its rollouts end at once and :func:`.trl_env.commit_reward` commits the region as it is
(reward 0 but for invalid-call penalties; the batch's check warns that no call was valid).

The recipe (``dreamer_gym/data/configs/grpo-trl-*.yaml``)::

    path: tools                      # tools | text
    env: {env_id: MemoryConsolidation-ScienceWorld-v1, overrides: {}}   # text also: max_turns, preview_words, grammar
    model: {name: Qwen/Qwen2.5-1.5B-Instruct, chat_template: qwen2_5}  # name: hub id, folder or smollm2-135m
    lora: {r: 16, alpha: 32, dropout: 0.0, target_modules: [q_proj, k_proj, v_proj, o_proj]}   # r: 0 = no peft
    dataset: {n: 1000, seed: 0, families: []}
    trl: {num_generations: 8, learning_rate: 5.0e-5, ...}   # any trl.GRPOConfig field, passed verbatim

``env.overrides`` builds the envs with ``ConsolidationEnv.experiment`` (their commits say ``comparable: False``);
without them the tools path uses ``gym.make`` of the id itself. Both paths draw the same reset seeds (and families)
from the same ``dataset`` section. Unknown keys anywhere raise :class:`~dreamer_gym.errors.ConfigError`.

Run: ``dreamer-gym train --algo trl --config CONFIG`` (or ``python -m dreamer_gym.methods.grpo.trl_recipe CONFIG``):
it trains, then saves the final model (a LoRA adapter with ``lora.r > 0``) and the recipe into
``trl.output_dir``; ``--check`` only validates the recipe.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from dreamer_gym.errors import ConfigError
from dreamer_gym.training.algorithms import TrainOptions

PATHS = ("tools", "text")
DEFAULT_ENV_ID = "MemoryConsolidation-ScienceWorld-v1"
TEXT_ONLY_ENV_KEYS = ("max_turns", "preview_words", "grammar")
# the tools path's first messages; ConsolidationToolEnv.reset appends the region and the budget to the user message
TOOLS_USER_MESSAGE = ("Consolidate the memory region below with the tools: inspect entries, keep the good ones, emit "
                      "merged or general entries with their provenance, then call commit.")


@dataclass(frozen=True)
class EnvSection:
    env_id: str = field(default=DEFAULT_ENV_ID, metadata={"help": "the env id trained on"})
    overrides: dict[str, Any] = field(default_factory=dict, metadata={
        "help": "ConsolidationEnv.experiment fields (not the id: its rewards are not comparable)"})
    max_turns: int = field(default=6, metadata={"help": "text path: policy turns per rollout"})
    preview_words: int = field(default=14, metadata={"help": "text path: words of each entry in the region listing"})
    grammar: str = field(default="keep", metadata={
        "help": "text path: command grammar, keep | drop | ops (docs/grpo.md); the tools path has none: its "
                "actions are the env's own tool calls"})


@dataclass(frozen=True)
class ModelSection:
    name: str = field(default="", metadata={"help": "hub id, local folder or the smollm2-135m alias"})
    chat_template: str | None = field(default=None, metadata={
        "help": "tools path: install trl/chat_templates/<name>.jinja on the tokenizer"})


@dataclass(frozen=True)
class LoraSection:
    r: int = field(default=16, metadata={"help": "LoRA rank (0: no peft, every weight trains)"})
    alpha: int = field(default=32, metadata={"help": "LoRA alpha"})
    dropout: float = field(default=0.0, metadata={"help": "LoRA dropout"})
    target_modules: tuple[str, ...] = field(default=("q_proj", "k_proj", "v_proj", "o_proj"),
                                            metadata={"help": "the modules LoRA adapts"})


@dataclass(frozen=True)
class DatasetSection:
    n: int = field(default=1000, metadata={
        "help": "rows; TRL repeats each num_generations times (one group = one reset seed)"})
    seed: int = field(default=0, metadata={"help": "draws the rows' reset seeds (and families)"})
    families: tuple[str, ...] = field(default=(), metadata={"help": "train on these families (empty: the env draws)"})


@dataclass(frozen=True)
class Recipe:
    """A checked recipe (see the module docstring); ``trl`` holds ``trl.GRPOConfig`` fields."""

    path: str
    env: EnvSection
    model: ModelSection
    lora: LoraSection
    dataset: DatasetSection
    trl: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        def plain(value: Any) -> Any:
            if isinstance(value, tuple):
                return list(value)
            if isinstance(value, dict):
                return {k: plain(v) for k, v in value.items()}
            return value

        out: dict[str, Any] = {"path": self.path}
        for name in ("env", "model", "lora", "dataset"):
            section = getattr(self, name)
            out[name] = {f.name: plain(getattr(section, f.name)) for f in dataclasses.fields(section)}
        if self.path == "tools":  # what load_recipe refuses there: the dict reads back as this recipe
            for key in TEXT_ONLY_ENV_KEYS:
                del out["env"][key]
        if self.model.chat_template is None:
            del out["model"]["chat_template"]
        out["trl"] = plain(self.trl)
        return out


# --- loading and checking ------------------------------------------------------------------------------------------
def _keys_ok(data: Any, allowed: Any, where: str) -> dict[str, Any]:
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"Expected `{where}` to be a mapping, got {type(data).__name__}")
    allowed = sorted(allowed)
    for key in data:
        if key not in allowed:
            raise ConfigError(f"Unknown key {key!r} in `{where}`; allowed: {allowed}")
    return dict(data)


def _int(value: Any, where: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(f"Expected `{where}` to be an int >= {low}, got {value!r}")
    return value


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"Expected `{where}` to be a list of strings, got {value!r}")
    return tuple(value)


def trl_chat_templates() -> list[str]:
    """The names of the chat templates TRL ships (``trl/chat_templates/<name>.jinja``, training variants left out)."""
    folder = resources.files("trl") / "chat_templates"
    return sorted(p.name[: -len(".jinja")] for p in folder.iterdir()
                  if p.name.endswith(".jinja") and not p.name.endswith("_training.jinja"))


def trl_chat_template(name: str) -> str:
    """The text of TRL's ``trl/chat_templates/<name>.jinja``, read as TRL reads it (its recognition compares
    strings exactly)."""
    if name not in trl_chat_templates():
        raise ConfigError(f"Unknown `model.chat_template` {name!r}; TRL ships: {trl_chat_templates()}")
    return (resources.files("trl") / "chat_templates" / f"{name}.jinja").read_text(encoding="utf-8")


def _grpo_fields() -> list[str]:
    from trl import GRPOConfig

    return sorted(f.name for f in dataclasses.fields(GRPOConfig) if f.init)


def load_recipe(config: str | Path | Mapping[str, Any]) -> Recipe:
    """Read (a YAML file) and check a recipe; no model, env or trainer is built.

    Raises:
        ConfigError: an unknown key (named, with the allowed ones), a bad value, or a setting the path refuses.
    """
    where = "recipe"
    if isinstance(config, Mapping):
        data: Any = dict(config)
    else:
        where = str(config)
        try:
            data = yaml.safe_load(Path(config).read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"Cannot read recipe {config}: {exc}") from exc
    data = _keys_ok(data, ("path", "env", "model", "lora", "dataset", "trl"), where)
    path = data.get("path")
    if path not in PATHS:
        raise ConfigError(f"Expected `path` in {where} to be one of {list(PATHS)} (tools: environment_factory with a "
                          f"tool-calling chat model; text: rollout_func with the command grammar), got {path!r}")

    from dreamer_gym.envs.config import ConsolidationConfig
    from dreamer_gym.contract.ids import REGISTERED

    env = _keys_ok(data.get("env"), [f.name for f in dataclasses.fields(EnvSection)], "env")
    env_id = env.get("env_id", DEFAULT_ENV_ID)
    if env_id not in REGISTERED:
        raise ConfigError(f"Unknown `env.env_id` {env_id!r}; registered: {sorted(REGISTERED)}")
    overrides = _keys_ok(env.get("overrides"), [f.name for f in dataclasses.fields(ConsolidationConfig)]
                         + ["region_chars"], "env.overrides")
    if path == "tools" and "grammar" in env:
        raise ConfigError(f"`env.grammar` ({env['grammar']!r}) is for path: text. A grammar constrains the text "
                          "model's sampling to our command language; on the tools path the model writes the env's "
                          "own JSON tool calls, which TRL parses after free generation, so there is nothing to "
                          "constrain. Drop `env.grammar`, or use path: text to train under a grammar")
    if path == "tools" and (text_only := [k for k in TEXT_ONLY_ENV_KEYS if k in env]):
        raise ConfigError(f"`env.{text_only[0]}` is for path: text; on the tools path the episode's length is "
                          "`trl.max_tool_calling_iterations` (and the env's max_tool_calls)")
    from dreamer_gym.methods.grpo.commands import GRAMMARS

    grammar = env.get("grammar", "keep")
    if grammar not in GRAMMARS:
        raise ConfigError(f"Expected `env.grammar` to be one of {list(GRAMMARS)}, got {grammar!r}")
    env_section = EnvSection(env_id, overrides, _int(env.get("max_turns", 6), "env.max_turns", 1),
                             _int(env.get("preview_words", 14), "env.preview_words", 1), grammar)

    model = _keys_ok(data.get("model"), [f.name for f in dataclasses.fields(ModelSection)], "model")
    name = model.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError("Expected `model.name`: a hub id, a local folder or the alias smollm2-135m")
    template = model.get("chat_template")
    if template is not None:
        if path == "text":
            raise ConfigError("`model.chat_template` is for path: tools (the text path writes its own turn format)")
        trl_chat_template(template)  # checks the name
    model_section = ModelSection(name, template)

    lora = _keys_ok(data.get("lora"), [f.name for f in dataclasses.fields(LoraSection)], "lora")
    dropout = lora.get("dropout", 0.0)
    if isinstance(dropout, bool) or not isinstance(dropout, int | float) or not 0 <= dropout < 1:
        raise ConfigError(f"Expected `lora.dropout` in [0, 1), got {dropout!r}")
    lora_section = LoraSection(_int(lora.get("r", 16), "lora.r", 0), _int(lora.get("alpha", 32), "lora.alpha", 1),
                               float(dropout), _strings(lora.get("target_modules", LoraSection.target_modules),
                                                        "lora.target_modules"))

    dataset = _keys_ok(data.get("dataset"), [f.name for f in dataclasses.fields(DatasetSection)], "dataset")
    dataset_section = DatasetSection(_int(dataset.get("n", 1000), "dataset.n", 1),
                                     _int(dataset.get("seed", 0), "dataset.seed", 0),
                                     _strings(dataset.get("families"), "dataset.families"))

    trl = _keys_ok(data.get("trl"), _grpo_fields(), "trl")
    if path == "text":
        if trl.get("use_vllm"):
            raise ConfigError("`trl.use_vllm` is for path: tools; the text path's rollouts are generated by the "
                              "trainer's own model under the command grammar (see dreamer_gym.methods.grpo.trl_bridge)")
        if trl.get("off_policy_mask_threshold") is not None:
            raise ConfigError("`trl.off_policy_mask_threshold` would compare the text path's grammar-constrained "
                              "log-probs with TRL's unconstrained ones: leave it unset")
    return Recipe(path, env_section, model_section, lora_section, dataset_section, trl)


# --- building ------------------------------------------------------------------------------------------------------
def make_tool_dataset(n: int, seed: int, families: tuple[str, ...] | list[str] = ()) -> Any:
    """The tools path's ``datasets.Dataset``: ``prompt`` (the task as system + user messages), ``seed`` (and
    ``family``): the reset arguments TRL hands ``ConsolidationToolEnv.reset``. Same seeds and families as
    :func:`.trl_bridge.make_dataset` with the same arguments."""
    from datasets import Dataset

    from dreamer_gym.methods.grpo.trl_bridge import make_dataset, parse_prompt
    from dreamer_gym.prompts import load_prompt

    # the task paragraph of the prompted consolidator's instructions (not its JSON-call format: TRL renders the tools)
    task = load_prompt("consolidator_system").partition("\n\nYou act by")[0]
    messages = [{"role": "system", "content": task}, {"role": "user", "content": TOOLS_USER_MESSAGE}]
    resets = [parse_prompt(p) for p in make_dataset(n, seed, list(families) or None)["prompt"]]
    columns: dict[str, list[Any]] = {"prompt": [messages] * n, "seed": [s for s, _ in resets]}
    if families:
        columns["family"] = [options["family"] for _, options in resets]  # type: ignore[index]
    return Dataset.from_dict(columns)


def _tokenizer(recipe: Recipe, model_path: str) -> Any:
    """The model's tokenizer; on the tools path with a template TRL recognises and a response parser set."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_path, padding_side="left", truncation_side="left")
    if recipe.model.chat_template is not None:
        tokenizer.chat_template = trl_chat_template(recipe.model.chat_template)
    if recipe.path != "tools":
        return tokenizer
    from trl.chat_template_utils import add_response_schema, supports_tool_calling

    hint = (f"set `model.chat_template` to a TRL template the model's tokenizer can render (one of "
            f"{trl_chat_templates()}; e.g. qwen3, or qwen2_5 for Qwen2.5), or use path: text")
    if not supports_tool_calling(tokenizer):
        raise ConfigError(f"The chat template of {recipe.model.name} cannot render a tool-calling conversation: {hint}")
    if getattr(tokenizer, "response_template", None) is None and getattr(tokenizer, "response_schema", None) is None:
        try:
            add_response_schema(tokenizer)  # what GRPOTrainer would do; here so the failure names the fix
        except ValueError as exc:
            raise ConfigError(f"TRL does not recognise the chat template of {recipe.model.name}, so it cannot parse "
                              f"tool calls ({exc}): {hint}") from None
    return tokenizer


def build_trl_trainer(config: str | Path | Mapping[str, Any] | Recipe) -> tuple[Any, Callable[[], None]]:
    """A ready ``trl.GRPOTrainer`` for the recipe ``config`` (a YAML path, a mapping or a :class:`Recipe`), and the
    closer that stops the envs and their reward service (call it when done, also after a failed ``train``)."""
    from peft import LoraConfig
    from trl import GRPOConfig, GRPOTrainer

    from dreamer_gym.llm.models import resolve_model
    from dreamer_gym.methods.grpo.trl_bridge import env_reward, make_dataset, make_rollout_func
    from dreamer_gym.methods.grpo.trl_env import commit_reward, make_environment_factory

    recipe = config if isinstance(config, Recipe) else load_recipe(config)
    model_path = resolve_model(recipe.model.name)
    tokenizer = _tokenizer(recipe, model_path)
    args = GRPOConfig(**recipe.trl)
    peft_config = None
    if recipe.lora.r > 0:
        peft_config = LoraConfig(r=recipe.lora.r, lora_alpha=recipe.lora.alpha, lora_dropout=recipe.lora.dropout,
                                 target_modules=list(recipe.lora.target_modules), task_type="CAUSAL_LM")
    env, data = recipe.env, recipe.dataset
    if recipe.path == "tools":
        factory = make_environment_factory(env.env_id, experiment=bool(env.overrides), **env.overrides)
        closer: Callable[[], None] = factory.close
        kwargs: dict[str, Any] = {"reward_funcs": [commit_reward], "environment_factory": factory,
                                  "train_dataset": make_tool_dataset(data.n, data.seed, data.families)}
    else:
        rollout = make_rollout_func(env.env_id, env.max_turns, env.overrides, env.preview_words,
                                    temperature=float(args.temperature), grammar=env.grammar)
        closer = rollout.close
        kwargs = {"reward_funcs": [env_reward], "rollout_func": rollout,
                  "train_dataset": make_dataset(data.n, data.seed, list(data.families) or None)}
    try:
        with warnings.catch_warnings():  # both paths use APIs TRL marks experimental; the recipe pins TRL's version
            warnings.filterwarnings("ignore", message="You are using '(rollout_func|environment_factory)'")
            trainer = GRPOTrainer(model=model_path, args=args, processing_class=tokenizer, peft_config=peft_config,
                                  **kwargs)
    except BaseException:
        closer()
        raise
    return trainer, closer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dreamer_gym.methods.grpo.trl_recipe",
                                     description="GRPO with TRL on a MemoryConsolidation-* id from one recipe YAML "
                                                 "(dreamer_gym/data/configs/grpo-trl-*.yaml): train, then save the model.")
    parser.add_argument("config", type=Path, help="the recipe YAML")
    parser.add_argument("--check", action="store_true", help="validate the recipe and exit")
    parser.add_argument("--resume", action="store_true", help="resume from the last checkpoint in trl.output_dir")
    args = parser.parse_args(argv)
    try:
        recipe = load_recipe(args.config)
    except ConfigError as exc:
        print(f"trl_recipe: error: {exc}", file=sys.stderr)
        return 2
    if args.check:
        print(f"{args.config}: ok (path: {recipe.path}, model: {recipe.model.name})")
        return 0
    trainer, closer = build_trl_trainer(recipe)
    try:
        trainer.train(resume_from_checkpoint=True if args.resume else None)
        out = Path(trainer.args.output_dir)
        trainer.save_model(str(out))  # the LoRA adapter with lora.r > 0, and the tokenizer (its chat template)
        (out / "recipe.yaml").write_text(yaml.safe_dump(recipe.to_dict(), sort_keys=False), encoding="utf-8")
        print(f"saved the final model and the recipe in {out}")
    finally:
        closer()
    return 0


def run(config: None, options: TrainOptions) -> int:
    """``dreamer-gym train --algo trl``: the recipe is ``--config`` (no config dataclass: the recipe holds it all)."""
    return main([str(options.config_path), *(["--check"] if options.check else []),
                 *(["--resume"] if options.resume else [])])


if __name__ == "__main__":
    sys.exit(main())
