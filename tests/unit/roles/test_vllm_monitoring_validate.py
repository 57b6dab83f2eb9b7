# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""vllm_monitoring refuses bad thresholds and schedules at validation time.

The role's real validation tasks (roles/vllm_monitoring/tasks/validate.yml) run through
ansible-playbook in check mode against localhost, once for all cases; each case records "accepted"
or its failure messages. That nothing changes on a refused host is proven on the simulated host
(molecule scenario vllm_server, test_monitoring.py::test_bad_thresholds_change_nothing).
"""

import pytest

from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import run_harness


THRESHOLDS = "KV-cache thresholds"
RUNS = "vllm_monitoring_alert_consecutive_runs="
SCHEDULE = "is not a usable schedule"
PATH = "vllm_monitoring_textfile_dir="
LISTEN = "node_exporter cannot listen there"
REMOTE = "which is not loopback"
ARGS = "it becomes --collector.textfile.directory"
# Values of the wrong type are refused by the entry point's argument spec, before the role's checks.
SPEC = "Validation of arguments failed"

# id: (vars, expected: "accepted" or (message fragment, offending value shown))
CASES = {
    "defaults": ({}, "accepted"),
    "equal_thresholds": ({"warn": 0.8, "alert": 0.8}, "accepted"),
    "one": ({"warn": 0.9, "alert": 1.0}, "accepted"),
    "hourly": ({"interval": 60, "delay": 300}, "accepted"),
    "every_minute": ({"interval": 1, "delay": 0}, "accepted"),
    "warn_above_alert": ({"warn": 0.9, "alert": 0.85}, (THRESHOLDS, "vllm_monitoring_warn_threshold=0.9")),
    "percent_not_fraction": ({"warn": 75, "alert": 85}, (THRESHOLDS, "vllm_monitoring_alert_threshold=85")),
    "zero": ({"warn": 0, "alert": 0.85}, (THRESHOLDS, "vllm_monitoring_warn_threshold=0")),
    "negative": ({"warn": -0.1, "alert": 0.85}, (THRESHOLDS, "vllm_monitoring_warn_threshold=-0.1")),
    "text": ({"alert": "high"}, (SPEC, "'vllm_monitoring_alert_threshold' is of type str and we were unable to convert to float")),
    "no_runs": ({"runs": 0}, (RUNS, "vllm_monitoring_alert_consecutive_runs=0")),
    "fraction_runs": ({"runs": 2.5}, (SPEC, "'vllm_monitoring_alert_consecutive_runs' is of type float and we were unable to convert to int")),
    "zero_timeout": ({"timeout": 0}, (RUNS, "vllm_monitoring_scrape_timeout=0")),
    "interval_7": ({"interval": 7}, (SCHEDULE, "vllm_monitoring_interval_minutes=7")),
    "interval_0": ({"interval": 0}, (SCHEDULE, "vllm_monitoring_interval_minutes=0")),
    "interval_90": ({"interval": 90}, (SCHEDULE, "vllm_monitoring_interval_minutes=90")),
    "interval_text": ({"interval": "10min"}, (SPEC, "'vllm_monitoring_interval_minutes' is of type str and we were unable to convert to int")),
    "delay_too_long": ({"interval": 10, "delay": 600}, (SCHEDULE, "vllm_monitoring_randomized_delay_sec=600")),
    "delay_negative": ({"delay": -5}, (SCHEDULE, "vllm_monitoring_randomized_delay_sec=-5")),
    "relative_dir": ({"textfile_dir": "textfiles"}, (PATH, "vllm_monitoring_textfile_dir=textfiles")),
    "root_dir": ({"textfile_dir": "/"}, (PATH, "vllm_monitoring_textfile_dir=/ ")),
    "dotdot_dir": ({"textfile_dir": "/var/lib/../etc"}, (PATH, "vllm_monitoring_textfile_dir=/var/lib/../etc")),
    # vllm_monitoring_node_exporter: install (the listen address is checked only then)
    "ne_default": ({"node_exporter": "install"}, "accepted"),
    "ne_loopback_other": ({"node_exporter": "install", "listen": "127.0.0.2:19100"}, "accepted"),
    "ne_ipv6_loopback": ({"node_exporter": "install", "listen": "[::1]:9100"}, "accepted"),
    "ne_localhost": ({"node_exporter": "install", "listen": "localhost:9100"}, "accepted"),
    "ne_port_max": ({"node_exporter": "install", "listen": "127.0.0.1:65535"}, "accepted"),
    "ne_remote_allowed": ({"node_exporter": "install", "listen": "10.0.0.5:9100", "allow_remote": True}, "accepted"),
    "ne_wildcard_v6_allowed": ({"node_exporter": "install", "listen": "[::]:9100", "allow_remote": True}, "accepted"),
    "ne_existing_ignores_listen": ({"listen": "nonsense"}, "accepted"),
    "ne_mode_unknown": ({"node_exporter": "docker"},
                        (SPEC, "vllm_monitoring_node_exporter must be one of: existing, install, got: docker")),
    "ne_remote": ({"node_exporter": "install", "listen": "10.0.0.5:9100"},
                  (REMOTE, "vllm_monitoring_node_exporter_listen is '10.0.0.5:9100'")),
    "ne_wildcard": ({"node_exporter": "install", "listen": "0.0.0.0:9100"},
                    (REMOTE, "vllm_monitoring_node_exporter_listen is '0.0.0.0:9100'")),
    "ne_host_name": ({"node_exporter": "install", "listen": "gpu-01.example.org:9100"},
                     (REMOTE, "vllm_monitoring_node_exporter_listen is 'gpu-01.example.org:9100'")),
    "ne_no_port": ({"node_exporter": "install", "listen": "127.0.0.1"}, (LISTEN, '"127.0.0.1"')),
    "ne_port_only": ({"node_exporter": "install", "listen": ":9100", "allow_remote": True}, (LISTEN, '":9100"')),
    "ne_port_zero": ({"node_exporter": "install", "listen": "127.0.0.1:0"}, (LISTEN, '"127.0.0.1:0"')),
    "ne_port_high": ({"node_exporter": "install", "listen": "127.0.0.1:65536"}, (LISTEN, '"127.0.0.1:65536"')),
    "ne_port_text": ({"node_exporter": "install", "listen": "127.0.0.1:http"}, (LISTEN, '"127.0.0.1:http"')),
    "ne_bad_octet": ({"node_exporter": "install", "listen": "127.0.0.256:9100"}, (LISTEN, '"127.0.0.256:9100"')),
    "ne_ipv6_bare": ({"node_exporter": "install", "listen": "::1:9100"}, (LISTEN, '"::1:9100"')),
    "ne_blank": ({"node_exporter": "install", "listen": "127.0.0.1:9100 --web.config.file=/x", "allow_remote": True},
                 (LISTEN, '"127.0.0.1:9100 --web.config.file=/x"')),
    "ne_textfile_blank": ({"node_exporter": "install", "textfile_dir": "/var/lib/node exporter"},
                          (ARGS, 'vllm_monitoring_textfile_dir is "/var/lib/node exporter"')),
    "ne_textfile_quote": ({"node_exporter": "install", "textfile_dir": '/var/lib/x"y'},
                          (ARGS, 'vllm_monitoring_textfile_dir is "/var/lib/x\\"y"')),
    "existing_textfile_blank": ({"textfile_dir": "/var/lib/node exporter"}, "accepted"),
}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    cases = [{"id": k, "vars": v[0]} for k, v in CASES.items()]
    return run_harness(tmp_path_factory.mktemp("validate"), "vllm_monitoring_validate.yml", cases)


@pytest.mark.parametrize("case", sorted(CASES))
def test_monitoring_settings(results, case):
    expected = CASES[case][1]
    got = results[case]
    if expected == "accepted":
        assert got == "accepted"
        return
    fragment, shown = expected
    assert isinstance(got, list) and len(got) == 1, got
    msg = got[0]
    if fragment == SPEC:
        assert msg.startswith(SPEC) and shown in msg, msg   # names the variable and the expected type
        return
    assert msg.startswith("host localhost: "), msg   # names the host
    assert fragment in msg, msg
    assert shown.strip() in msg, msg                 # names the value
    assert "Fix: " in msg, msg                       # and the fix
