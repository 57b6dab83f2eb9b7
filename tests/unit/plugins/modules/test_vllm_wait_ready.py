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
