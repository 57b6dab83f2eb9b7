# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""vllm_wait_ready run as Ansible runs it (subprocess, args file) against a local HTTP server
answering /health and /v1/completions, with a `systemctl` on PATH that prints the unit state a
test plants (the form `systemctl show -p ActiveState -p SubState -p NRestarts -p Result` prints).
The molecule scenario vllm_server waits for the stand-in vLLM with it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import threading

import pytest

from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import run_module

try:
    from http.server import BaseHTTPRequestHandler, HTTPServer
except ImportError:  # pragma: no cover
    BaseHTTPRequestHandler = HTTPServer = None


@pytest.fixture
def host(tmp_path, monkeypatch):
    """(set unit state, set completion answer, port): a systemctl stand-in and an HTTP server."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    state = tmp_path / "unit-state"
    state.write_text(u"ActiveState=active\nSubState=running\nNRestarts=0\nResult=success\n")
    script = bin_dir / "systemctl"
    script.write_text(u"#!/bin/sh\ncat '%s'\n" % state)
    script.chmod(0o755)
    monkeypatch.setenv("PATH", "%s%s%s" % (bin_dir, os.pathsep, os.environ.get("PATH", "")))
    answer = {"completion": (200, '{"choices": [{"text": "pong"}]}')}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, code, body):
            self.send_response(code)
            self.end_headers()
            self.wfile.write(body.encode())

        def do_GET(self):
            self._send(200 if self.path == "/health" else 404, "")

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._send(*answer["completion"])

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever)
    thread.daemon = True
    thread.start()
    yield state.write_text, (lambda code, body: answer.update(completion=(code, body))), server.server_address[1]
    server.shutdown()
    server.server_close()


def wait(tmp_path, port, **extra):
    args = {"instances": [{"name": "n0-0", "port": port}], "model_name": "Qwen/Qwen2.5-0.5B-Instruct",
            "timeout": 5, "interval": 0.1, "log_dir": str(tmp_path)}
    args.update(extra)
    return run_module(tmp_path, "vllm_wait_ready", args)


def test_healthy_instance_and_completion(tmp_path, host):
    rc, res = wait(tmp_path, host[2])
    assert rc == 0 and res["changed"] is False, res
    assert list(res["instances"]) == ["n0-0"]
    assert res["completion"]["status"] == 200
    assert res["completion"]["url"] == "http://127.0.0.1:%d/v1/completions" % host[2]


def test_failed_unit_fails_at_once_with_its_log(tmp_path, host):
    host[0](u"ActiveState=failed\nSubState=failed\nNRestarts=0\nResult=exit-code\n")
    (tmp_path / "n0-0.log").write_text(u"line 1\nValueError: the real reason\n")
    rc, res = wait(tmp_path, host[2])
    assert rc == 1 and res["msg"].startswith("vllm@n0-0.service (port %d) is not ready: unit failed "
                                             "(result exit-code)" % host[2]), res["msg"]
    assert "ValueError: the real reason" in res["msg"] and "journalctl -u vllm@n0-0.service" in res["msg"]


def test_wrong_api_key_is_a_configuration_error(tmp_path, host):
    host[1](401, '{"error": "Unauthorized"}')
    rc, res = wait(tmp_path, host[2], api_key="sk-test-0123456789")
    assert rc == 1 and "the API key is wrong or missing" in res["msg"]
    assert "sk-test-0123456789" not in json.dumps(res)   # the key itself is never printed


def test_unknown_model_name_is_a_configuration_error(tmp_path, host):
    host[1](404, '{"message": "The model `x` does not exist."}')
    rc, res = wait(tmp_path, host[2])
    assert rc == 1 and "answered 404 for model 'Qwen/Qwen2.5-0.5B-Instruct'" in res["msg"]


def test_instance_without_port_is_refused(tmp_path, host):
    rc, res = run_module(tmp_path, "vllm_wait_ready", {"instances": [{"name": "n0-0"}], "model_name": "m"})
    assert rc == 1 and res["msg"] == "vllm_wait_ready: every instance needs 'name' and 'port'; got {'name': 'n0-0'}"


# --- the log quoted on failure is read without following the service user's links ---------------

def test_log_that_is_a_link_to_a_root_only_file_is_not_quoted(tmp_path, host):
    host[0](u"ActiveState=failed\nSubState=failed\nNRestarts=0\nResult=exit-code\n")
    secret = tmp_path / "root-only"
    secret.write_text(u"s16-root-only-secret\n")
    secret.chmod(0o600)
    os.symlink(str(secret), str(tmp_path / "n0-0.log"))
    rc, res = wait(tmp_path, host[2], log_owner="root")
    assert rc == 1 and "s16-root-only-secret" not in res["msg"]
    assert "Last lines of %s:\n(log not read: a symbolic link, not followed)" % (tmp_path / "n0-0.log") in res["msg"]


def test_log_that_is_a_fifo_does_not_hang_the_failure(tmp_path, host):
    host[0](u"ActiveState=failed\nSubState=failed\nNRestarts=0\nResult=exit-code\n")
    os.mkfifo(str(tmp_path / "n0-0.log"))
    rc, res = wait(tmp_path, host[2])
    assert rc == 1 and "(log not read: a FIFO, not a regular file)" in res["msg"]


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")
def test_log_of_another_user_is_not_quoted(tmp_path, host):
    host[0](u"ActiveState=failed\nSubState=failed\nNRestarts=0\nResult=exit-code\n")
    (tmp_path / "n0-0.log").write_text(u"someone else's\n")
    os.chown(str(tmp_path / "n0-0.log"), 4243, 4243)
    rc, res = wait(tmp_path, host[2], log_owner="no-such-user-s16")
    assert rc == 1 and "someone else's" not in res["msg"]
    assert "(log not read: owned by uid 4243, not by root (user 'no-such-user-s16' does not exist))" in res["msg"]


# --- bad input: a clear message naming the option and the value, never a traceback ---------------
# Each of these traced back before (IndexError, TypeError, http.client.InvalidURL, ValueError).

@pytest.mark.parametrize("extra, message", [
    ({"instances": []},
     "vllm_wait_ready: instances is []: give the planned instances (ansible_facts.vllm_layout.instances)"),
    ({"instances": [{"name": ["n0-0"], "port": 8001}]},
     "vllm_wait_ready: instances[0].name is ['n0-0']: an instance name is a string of letters, digits"),
    ({"instances": [{"name": "n0-0", "port": 8001}, {"name": "n1-0", "port": "eighty"}]},
     "vllm_wait_ready: instances[1].port is 'eighty': give the instance's TCP port, a number 1-65535"),
    ({"instances": [{"name": "n0-0", "port": True}]},
     "vllm_wait_ready: instances[0].port is True: give the instance's TCP port"),
    ({"unit_template": "vllm.service"},
     "vllm_wait_ready: unit_template is 'vllm.service': it needs exactly one %s (the instance name)"),
    ({"unit_template": "vllm@%(name)s.service"},
     "vllm_wait_ready: unit_template is 'vllm@%(name)s.service': it needs exactly one %s"),
    ({"interval": -1}, "vllm_wait_ready: interval is -1.0: give the seconds between polls, a finite number > 0"),
    ({"endpoint_url": "http://127.0.0.1:eighty"},
     "vllm_wait_ready: endpoint_url is 'http://127.0.0.1:eighty': give the endpoint's base URL"),
    ({"endpoint_url": "127.0.0.1:8000"}, "vllm_wait_ready: endpoint_url is '127.0.0.1:8000': give the endpoint's"),
    ({"log_prefix": "../../etc/"}, "vllm_wait_ready: log_prefix is '../../etc/': a file name prefix holds no '/'"),
])
def test_bad_input_is_a_clear_error(tmp_path, extra, message):
    args = {"instances": [{"name": "n0-0", "port": 8001}], "model_name": "m", "timeout": 1, "interval": 0.1,
            "log_dir": str(tmp_path)}
    args.update(extra)
    rc, res = run_module(tmp_path, "vllm_wait_ready", args)
    assert rc == 1 and res["msg"].startswith(message), res["msg"]


def test_port_given_as_digits_is_taken(tmp_path, host):
    rc, res = wait(tmp_path, host[2], instances=[{"name": "n0-0", "port": str(host[2])}])
    assert rc == 0 and res["completion"]["url"] == "http://127.0.0.1:%d/v1/completions" % host[2]
