# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/diagnose.yml as an operator runs it, against the symlink race of issue 16.

The vLLM service user owns /var/log/vllm: as that user a test plants /var/log/vllm/x.log as a
symbolic link to a root-only 0600 file holding a secret, then runs the playbook (root on the
host). The bundle on the controller must hold the real logs but not the secret, be mode 0600 in a
0700 directory under gpu_fleet_report_dir, and name the link as skipped. The bundle is read here
with tarfile, not with the collection's code. Everything planted is removed afterwards.
"""
import os
import stat
import tarfile
import time

import pytest
from testinfra_helpers import extra_vars, run_playbook

LINK = "/var/log/vllm/x.log"
SECRET_FILE = "/root/s16-root-only-secret"


@pytest.fixture
def planted_link(host):
    secret = "s16-secret-%d" % int(time.time() * 1000)
    host.check_output("umask 077; printf '%%s\\n' '%s' > %s" % (secret, SECRET_FILE))
    host.check_output("runuser -u vllm -- ln -s %s %s" % (SECRET_FILE, LINK))  # as the service user
    yield secret
    host.run("rm -f %s %s" % (LINK, SECRET_FILE))


def test_diagnose_does_not_follow_the_service_users_link(host, planted_link, tmp_path):
    secret = planted_link
    f = host.file(SECRET_FILE)
    assert (f.user, f.mode) == ("root", 0o600) and host.file(LINK).is_symlink
    assert host.check_output("stat -c %%U %s" % LINK) == "vllm"  # the link itself (host.file follows it)
    reports = tmp_path / "reports"
    proc = run_playbook("playbooks/diagnose.yml", *extra_vars({"gpu_fleet_report_dir": str(reports)}))
    out = proc.stdout
    assert proc.returncode == 0, out
    assert "Traceback" not in out
    assert "%s: a symbolic link, not followed" % LINK in out

    directory = reports / "diagnostics"
    bundles = sorted(directory.glob("gpu-fleet-diag-*.tar.gz"))
    assert len(bundles) == 1, bundles
    assert stat.S_IMODE(os.stat(str(directory)).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(str(bundles[0])).st_mode) == 0o600

    with tarfile.open(str(bundles[0])) as tar:
        members = dict((m.name.lstrip("./"), m) for m in tar.getmembers())
        contents = dict((name, tar.extractfile(m).read()) for name, m in members.items() if m.isfile())
    assert not any(secret.encode() in data for data in contents.values())
    assert "logs/var/log/vllm/x.log" not in members
    # the collection still works: the instances' own logs are in the bundle
    assert b"vLLM API server version" in contents["logs/var/log/vllm/n1-0.log"]
    assert not any(m.issym() or m.islnk() for m in members.values())
    summary = contents["SUMMARY.txt"].decode()
    skipped = summary.split("Not collected (skipped):\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert "- %s: a symbolic link, not followed" % LINK in skipped, summary
    # nothing of the run stays on the host
    assert host.run("ls -d /tmp/gpu-fleet-diag.* 2>/dev/null").stdout.strip() == ""
