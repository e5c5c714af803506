"""Bring your own algorithm: an env id served over OpenEnv, played with OpenEnv's own client.

`dreamer-gym serve ID --port P` is what you run on a machine of your own; here the example starts it,
plays one keep-all episode through the client and stops it. Run: python docs/examples/byo_openenv.py
(a test runs this file)
"""
import json
import socket
import subprocess
import sys
import time

import requests

from dreamer_gym.remote.openenv_server import ConsolidationEnvClient

with socket.socket() as probe:  # a free local port
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
server = subprocess.Popen([sys.executable, "-m", "dreamer_gym.cli", "serve", "MemoryConsolidation-ScienceWorld-v1",
                           "--port", str(port), "--log-level", "warning"])
url = f"http://127.0.0.1:{port}"
try:
    for _ in range(180):  # the server is up when /health answers
        try:
            if requests.get(f"{url}/health", timeout=1).ok:
                break
        except requests.ConnectionError:
            time.sleep(0.5)
    with ConsolidationEnvClient(base_url=url).sync() as env:
        result = env.reset(seed=0, options={"family": "power-component"})
        ids = [e["id"] for e in result.observation.info["region"]]
        result = env.step(json.dumps({"tool": "keep", "ids": ids}))  # a tool call: the JSON string the gym env takes
        result = env.step(json.dumps({"tool": "commit"}))
        info = result.observation.info
        print(f"over OpenEnv: done={result.done}, reward {result.reward:+.3f}, "
              f"score {info['score_before']} -> {info['score_after']}")
finally:
    server.terminate()
    server.wait(timeout=30)
