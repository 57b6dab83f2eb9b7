# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the testinfra suites of the molecule scenarios (molecule/*/tests/) share.

On the import path of every suite through the verifier's environment in
.config/molecule/config.yml (PYTHONPATH). Run under molecule only: a helper that needs a
MOLECULE_* variable fails the test with a message saying so.

* where things are: project(), inventory_file(), inventory_dir(), scenario_dir();
* molecule_host(name): the testinfra host of the scenario's inventory, reached the way Ansible
  reaches it (SSH with the scenario's key and control socket);
* run_playbook(path, *args): ansible-playbook against the scenario's inventory, as an operator
  runs it, output kept for assertions; extra_vars(*dicts) turns dicts into -e arguments;
* recap(output, host): the PLAY RECAP counters of one host;
* wait_until(probe, timeout, what): poll until probe() is true, else fail naming what;
* env_file(host, path): an instance environment file on the host, read with the collection's
  one reader of that format (plugins/module_utils/_instance_env.py);
* http(host, url, body, headers): one HTTP request from inside the host (python3 is there, curl
  is not); stream_arrival_times(host, model, headers): when the chunks of a streamed completion
  through the endpoint arrive.
"""
import json
import os
import shlex
import subprocess
import time

import pytest
import testinfra

# the collection of this checkout (.build/ac, on PYTHONPATH through .config/molecule/config.yml)
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._instance_env import parse_env_text


def _molecule_env(name):
    value = os.environ.get(name)
    if not value:
        pytest.fail("run under molecule (%s is unset)" % name)
    return value


def project():
    """The repository root (MOLECULE_PROJECT_DIRECTORY)."""
    return _molecule_env("MOLECULE_PROJECT_DIRECTORY")


def inventory_file():
    """The inventory molecule wrote for the scenario (ansible_inventory.yml)."""
    return _molecule_env("MOLECULE_INVENTORY_FILE")


def inventory_dir():
    """The directory of that inventory: with the host_vars and group_vars the scenario links."""
    return os.path.dirname(inventory_file())


def scenario_dir():
    return _molecule_env("MOLECULE_SCENARIO_DIRECTORY")


def molecule_host(name):
    """The testinfra host `name` of the scenario's inventory (SSH, as Ansible reaches it)."""
    return testinfra.get_host("ansible://" + name, ansible_inventory=inventory_file())


def extra_vars(*items):
    """-e arguments, one JSON document per dict."""
    args = []
    for item in items:
        args += ["-e", json.dumps(item)]
    return args


def run_playbook(playbook, *args, env=None, inventory=None, timeout=600):
    """ansible-playbook PLAYBOOK (relative to the project or absolute) against the scenario's
    inventory, from the project directory, with the collection of this checkout and no colour.

    Returns the CompletedProcess; its stdout holds stdout and stderr, in order.
    """
    root = project()
    run_env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(root, ".build", "ac"),
                   ANSIBLE_FORCE_COLOR="false", ANSIBLE_NOCOLOR="1")
    run_env.update(env or {})
    argv = [os.path.join(root, ".venv", "bin", "ansible-playbook"), "-i", inventory or inventory_file(),
            os.path.join(root, playbook)] + list(args)
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          cwd=root, env=run_env, timeout=timeout, check=False)


def recap(output, host):
    """{'ok': '12', 'changed': '0', ...} of HOST's last PLAY RECAP line in OUTPUT."""
    line = [l for l in output.splitlines() if l.startswith(host) and "changed=" in l][-1]
    return dict(part.split("=") for part in line.split(":", 1)[1].split())


def env_file(host, path):
    """{KEY: VALUE} of the environment file PATH on the host (instance.env.j2 as rendered there)."""
    return parse_env_text(host.file(path).content_string)


def wait_until(probe, timeout, what, interval=3):
    """Call PROBE every INTERVAL seconds until it returns a true value (returned), at most
    TIMEOUT seconds; then fail with WHAT (what did not happen)."""
    deadline = time.time() + timeout
    while True:
        result = probe()
        if result:
            return result
        if time.time() >= deadline:
            raise AssertionError("%s within %d s" % (what, timeout))
        time.sleep(interval)


_HTTP = r"""
import json, sys, urllib.request, urllib.error
url, body, headers = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
if body:
    headers["Content-Type"] = "application/json"
req = urllib.request.Request(url, data=body.encode() if body else None, headers=headers)
try:
    resp = urllib.request.urlopen(req, timeout=30)
    print(json.dumps({"status": resp.status, "headers": dict(resp.headers), "body": resp.read().decode()}))
except urllib.error.HTTPError as exc:
    print(json.dumps({"status": exc.code, "headers": dict(exc.headers), "body": exc.read().decode()}))
except OSError as exc:
    print(json.dumps({"status": 0, "headers": {}, "body": str(exc)}))
"""


def http(host, url, body=None, headers=None):
    """One HTTP request from inside the host: {status, headers, body} (status 0: no connection)."""
    argv = ["python3", "-c", _HTTP, url, body or "", json.dumps(headers or {})]
    return json.loads(host.check_output(" ".join(shlex.quote(a) for a in argv)))


_STREAM = r"""
import json, socket, sys, time
model, headers = sys.argv[1], json.loads(sys.argv[2])
body = json.dumps({"model": model, "prompt": "hi", "max_tokens": 6, "stream": True}).encode()
extra = "".join("%s: %s\r\n" % item for item in headers.items()).encode()
s = socket.create_connection(("127.0.0.1", 8000))
s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra +
          b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
t0 = time.time(); times = []; buf = b""
while True:
    d = s.recv(65536)
    if not d: break
    n = d.count(b"data: ")
    times += [time.time() - t0] * n
    buf += d
print(json.dumps({"times": times, "done": b"data: [DONE]" in buf}))
"""


def stream_arrival_times(host, model, headers=None):
    """Stream a completion through the endpoint (port 8000) from inside the host: {times: the
    arrival time of each SSE chunk in seconds, done: whether [DONE] arrived}."""
    argv = ["python3", "-c", _STREAM, model, json.dumps(headers or {})]
    return json.loads(host.check_output(" ".join(shlex.quote(a) for a in argv)))
