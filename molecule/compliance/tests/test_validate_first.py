# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Validate first, change after (issue 16), on the converged a100x6_2numa host: site.yml with one
bad value of each role family fails in its first play, and the host is byte for byte as before.

The proof is the host's own state, not the collection's messages: a checksum of every file's
path, mode, owner and contents under /etc, /opt and /var/lib (less what changes on its own: the
systemd, logrotate and apt list state, and the monitoring state, with the monitoring timer
stopped), and the main PIDs of the running instances. Runs after test_after_site.py (file order)
and leaves the host as it found it (the timer started again)."""

import pytest
from testinfra_helpers import extra_vars, run_playbook

STATE = ("/var/lib/systemd", "/var/lib/logrotate", "/var/lib/apt/lists", "/var/lib/gpu-fleet-monitor")
TREE_SUM = (
    "find /etc /opt /var/lib -xdev \\( " + " -o ".join("-path %s" % p for p in STATE) + " \\) -prune -o "
    "\\( -type f -o -type l -o -type d \\) -printf '%p %m %u %g %y %l\\n' | LC_ALL=C sort > /tmp/tree.meta && "
    "find /etc /opt /var/lib -xdev \\( " + " -o ".join("-path %s" % p for p in STATE) + " \\) -prune -o "
    "-type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum > /tmp/tree.sums && "
    "cat /tmp/tree.meta /tmp/tree.sums | sha256sum"
)
INSTANCES = ("n0-0", "n1-0")

# One bad value per role family, each seen to change hosts before the run failed (issue 16).
BAD = {
    "serving: ports planned past 65535": ({"vllm_server_base_port": 65535}, "past 65535"),
    "tuning: a sysctl value with a newline": ({"host_tuning_sysctl": {"vm.max_map_count": "1\nkernel.panic=1"}},
                                              "host_tuning_sysctl entry \"vm.max_map_count\""),
    "housekeeping: logrotate hourly": ({"housekeeping_logrotate_frequency": "hourly"},
                                       "housekeeping_logrotate_frequency must be one of: daily, weekly, monthly"),
}


@pytest.fixture(scope="module")
def quiet_host(host):
    """The monitoring timer stopped (its runs write the state), restarted afterwards."""
    host.run_test("systemctl stop gpu-fleet-monitor.timer gpu-fleet-monitor.service")
    yield host
    host.run_test("systemctl start gpu-fleet-monitor.timer")


def _state(host):
    tree = host.check_output(TREE_SUM)
    pids = dict((n, host.check_output("systemctl show -p MainPID --value vllm@%s" % n)) for n in INSTANCES)
    return tree, pids


@pytest.mark.parametrize("family", sorted(BAD))
def test_bad_value_fails_in_the_first_play_and_changes_nothing(quiet_host, family):
    values, message = BAD[family]
    before = _state(quiet_host)
    assert all(pid != "0" for pid in before[1].values()), before
    proc = run_playbook("site.yml", *extra_vars(values))
    out = proc.stdout
    assert proc.returncode != 0, out[-3000:]
    assert message in out, out[-3000:]
    # the failure came from the first play: no task of the second ran
    second = out.split("PLAY [Tune, pin and serve]")
    assert len(second) == 1 or "TASK [" not in second[1], out[-3000:]
    assert _state(quiet_host) == before
