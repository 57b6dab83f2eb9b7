# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""vllm_drain run as Ansible runs it (subprocess, args file) against a local HTTP server whose
/metrics says how many requests it holds, poll by poll."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import socket
import threading

import pytest

from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import run_module

try:
    from http.server import BaseHTTPRequestHandler, HTTPServer
except ImportError:  # pragma: no cover
    BaseHTTPRequestHandler = HTTPServer = None

SAMPLE = ('vllm:num_requests_running{engine="0",model_name="m"} %s\n'
          'vllm:num_requests_waiting{engine="0",model_name="m"} 0.0\n')


@pytest.fixture
def server():
    """(answers, polls, port): /metrics answers answers[i] at poll i (the last one from then on)."""
    answers, polls = [], []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            polls.append(self.path)
            body = answers[min(len(polls), len(answers)) - 1].encode()
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body)

    srv = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=srv.serve_forever)
    thread.daemon = True
    thread.start()
    yield answers, polls, srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def drain(tmp_path, port, **extra):
    args = dict({"port": port, "timeout": 3, "settle": 0, "interval": 0.05}, **extra)
    return run_module(tmp_path, "vllm_drain", args)


def test_waits_until_two_polls_see_nothing_held(tmp_path, server):
    server[0].extend([SAMPLE % "2.0", SAMPLE % "1.0", SAMPLE % "0.0", SAMPLE % "0.0"])
    rc, res = drain(tmp_path, server[2])
    assert rc == 0 and res["drained"] is True and res["in_flight"] == 0 and res["listening"] is True, res
    assert server[1] == ["/metrics"] * 4


def test_timeout_is_a_warning_not_a_failure(tmp_path, server):
    server[0].append(SAMPLE % "1.0")
    rc, res = drain(tmp_path, server[2], timeout=1)
    assert rc == 0 and res["drained"] is False and res["in_flight"] == 1, res
    assert "still held 1 request(s) after 1 s" in json.dumps(res["warnings"])


def test_no_gauge_waits_the_timeout_and_says_why(tmp_path, server):
    server[0].append("python_gc_objects_collected_total 1.0\n")
    rc, res = drain(tmp_path, server[2], timeout=1)
    assert rc == 0 and res["drained"] is False and res["in_flight"] is None and res["seconds"] >= 1, res
    assert "--disable-log-stats" in json.dumps(res["warnings"])


def test_nothing_listening_is_drained(tmp_path):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    rc, res = drain(tmp_path, port)
    assert rc == 0 and res["drained"] is True and res["listening"] is False, res


@pytest.mark.parametrize("args, why", [({"port": 0}, "port is 0: a TCP port"), ({"timeout": 0}, "timeout is 0"),
                                       ({"interval": -1.0}, "interval is -1.0")])
def test_bad_parameters(tmp_path, args, why):
    rc, res = run_module(tmp_path, "vllm_drain", dict({"port": 8001}, **args))
    assert rc == 1 and why in res["msg"], res
