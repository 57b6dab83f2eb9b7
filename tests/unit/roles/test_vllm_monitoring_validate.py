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
