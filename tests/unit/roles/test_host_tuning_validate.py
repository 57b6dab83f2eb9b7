# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""host_tuning refuses a governor name that is not one in its validation (site.yml play 1),
before its unit file exists, and otherwise reports what the CPUs need (a dry run, read-only).

The role's real validation tasks (roles/host_tuning/tasks/validate.yml and governor_check.yml)
run through ansible-playbook in check mode against localhost, once for all cases. That the unit is
then written only after the checks, and verified by systemd, is shown on the simulated host
(molecule scenario host_tuning)."""

import pytest

from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import run_harness

REFUSED = "it must be a cpufreq governor name: a lower-case letter, then lower-case letters, digits, _ and - only"
# the helper's outcomes (roles/host_tuning/files/gpu-fleet-cpu-governor, last line of stdout)
OUTCOMES = ("applied: ", "pending: ", "not applicable: ", "not offered: ")

CASES = {
    "performance": ({"governor": "performance"}, "accepted"),
    "schedutil": ({"governor": "schedutil"}, "accepted"),
    "with_digit_dash_underscore": ({"governor": "gov_2-x"}, "accepted"),
    "upper_case": ({"governor": "Performance"}, REFUSED),
    "space": ({"governor": "perf ormance"}, REFUSED),
    "trailing_newline": ({"governor": "performance\n"}, REFUSED),
    "unit_injection": ({"governor": "performance\nExecStartPre=/bin/sh -c reboot"}, REFUSED),
    "shell": ({"governor": "x;reboot"}, REFUSED),
    "empty": ({"governor": ""}, REFUSED),
    "an_option": ({"governor": "--dry-run"}, REFUSED),
    "too_long": ({"governor": "g" * 33}, REFUSED),
    "disabled_not_checked": ({"governor": "Not A Governor", "enabled": False}, "not checked"),
}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    cases = [{"id": k, "vars": v[0]} for k, v in CASES.items()]
    return run_harness(tmp_path_factory.mktemp("validate"), "host_tuning_validate.yml", cases)


@pytest.mark.parametrize("case", sorted(CASES))
def test_governor_validation(results, case):
    expected = CASES[case][1]
    got = results[case]
    if expected == "accepted":
        assert got.startswith("accepted: "), got
        assert got[len("accepted: "):].startswith(OUTCOMES), got
    elif expected == "not checked":
        assert got == "accepted: not checked", got
    else:
        assert got.startswith("host localhost: host_tuning_governor is "), got
        assert expected in got, got
        assert got.endswith("Nothing was changed."), got
