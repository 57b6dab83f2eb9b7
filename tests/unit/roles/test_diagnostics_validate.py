# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""roles/diagnostics/tasks/validate.yml through the real playbooks/diagnose.yml on localhost
(--check): each refused value fails the play with the host, the variable, the value and the fix,
before the temporary directory on the host is made."""
import json
import os

import pytest

from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import ROOT, cached, run_playbook

CASES = [
    ({"diagnostics_nccl_logs": ["/tmp/*/nccl.log"]},
     "diagnostics_nccl_logs entry '/tmp/*/nccl.log' is refused: its directory part holds a wildcard"),
    ({"diagnostics_nccl_logs": ["nccl*.log"]},
     "diagnostics_nccl_logs entry 'nccl*.log' is refused: it is not an absolute path"),
    ({"diagnostics_nccl_logs": ["/var/log/vllm/"]},
     "diagnostics_nccl_logs entry '/var/log/vllm/' is refused: it names a directory, not files"),
    ({"diagnostics_log_max_bytes": 0}, "diagnostics_log_max_bytes is '0': give a positive number of bytes"),
    ({"diagnostics_log_owner": "Bad User"}, "diagnostics_log_owner is 'Bad User': give the user name"),
    ({"diagnostics_dest": ROOT}, "diagnostics_dest is '%s': the bundles hold the host's logs" % ROOT),
]


def _run(tmp_path, extra):
    extra = dict(extra, gpu_fleet_report_dir=str(tmp_path / "reports"))
    proc = run_playbook(tmp_path, os.path.join(ROOT, "playbooks", "diagnose.yml"), "-i", "localhost,", "-c", "local",
                        "-e", json.dumps(extra), check=True)
    return {"rc": proc.returncode, "out": proc.stdout}


@pytest.mark.parametrize("extra, message", CASES)
def test_refused_value_fails_before_anything_is_written(tmp_path, extra, message):
    result = cached("diagnostics-validate " + json.dumps(extra, sort_keys=True), lambda: _run(tmp_path, extra))
    out = " ".join(result["out"].split())
    assert result["rc"] != 0 and "Traceback" not in out
    assert "host localhost: " + message in out, out
    assert "Nothing was changed." in out
    assert "Create the collection directory on the host" not in out
