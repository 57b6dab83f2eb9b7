# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""vllm_real: the rolling switches and the restart of side_effect.yml, each under 8 clients (half
streaming) through the endpoint, with the real vLLM. Bar (issue 18): failed = 0 for the rollback
full -> degraded, the switch back and the restart of one instance; nginx retries are reported."""
import json

import pytest

PHASES = ("rollback", "back", "restart")


def _retried(host):
    log = host.file("/var/log/nginx/gpu-fleet-vllm.access.log").content_string.splitlines()
    return [l for l in log if "upstream=" in l and "," in l.split("upstream=")[1].split()[0]]


@pytest.mark.parametrize("phase", PHASES)
def test_phase_dropped_no_request(host, phase):
    summary = json.loads(host.file("/root/i18-%s.json" % phase).content_string)
    times = json.loads(host.file("/root/i18-times.json").content_string)
    print("vllm_real %s: sent %d (streamed %d), failed %d, playbook %.1f s, load %.1f s" % (
        phase, summary["sent"], summary["streamed"], summary["failed"], times[phase],
        summary["stopped"] - summary["started"]))
    assert summary["clients"] == 8 and summary["streamed"] > 0 and summary["plain"] > 0, summary
    assert summary["failed"] == 0, summary["failures"][:10]


def test_nginx_retried_nothing(host):
    retried = _retried(host)
    print("vllm_real: requests nginx retried on another instance: %d" % len(retried))
    assert retried == [], retried[:10]


def test_back_on_the_full_layout_with_n0_1_restarted_last(host):
    state = {u: host.check_output("systemctl is-active %s || true" % u).strip()
             for u in ("vllm@n0-0.service", "vllm@n0-1.service", "vllm-degraded@n0-0.service",
                       "vllm.target", "vllm-degraded.target")}
    assert state == {"vllm@n0-0.service": "active", "vllm@n0-1.service": "active",
                     "vllm-degraded@n0-0.service": "inactive", "vllm.target": "active",
                     "vllm-degraded.target": "inactive"}
    since = {u: int(host.check_output("systemctl show -p ActiveEnterTimestampMonotonic --value %s" % u))
             for u in ("vllm@n0-0.service", "vllm@n0-1.service")}
    assert since["vllm@n0-1.service"] > since["vllm@n0-0.service"], since


def test_the_degraded_instance_served_during_the_rollback(host):
    log = host.file("/var/log/nginx/gpu-fleet-vllm.access.log").content_string
    assert "upstream=127.0.0.1:8101 upstream_status=200" in log
