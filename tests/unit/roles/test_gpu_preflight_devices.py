# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpu_preflight refuses a host without NVIDIA device nodes (/dev/nvidia<minor>, character
devices), with the host, what is missing and the fix, before anything changes.

The role's real task file (roles/gpu_preflight/tasks/devices.yml) runs through ansible-playbook in
check mode against localhost, once for all cases, on /dev trees planted in tmp_path: character
devices 195:<minor> as the NVIDIA driver makes them (mknod: needs root), plain files of those
names, none. The refusal before any change, as an operator runs site.yml, is proven on the
simulated host (molecule scenario compliance, test_site_refuses_a_host_without_device_nodes).
"""

import os
import stat

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._host_readings import NVIDIA_GPU_NODE
from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import run_harness

ROLE_TASKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "roles", "gpu_preflight",
                          "tasks", "devices.yml")
FIX = ("Fix: load the NVIDIA driver (`modprobe nvidia`; `nvidia-modprobe -c <minor>` creates /dev/nvidia<minor> "
       "where no udev rule does), or, in a container, pass the GPUs through (NVIDIA Container Toolkit `--gpus all` "
       "or CDI, or `--device /dev/nvidia<minor> --device /dev/nvidiactl --device /dev/nvidia-uvm`)")


def plant(tmp_path):
    dirs = {name: tmp_path / name for name in ("gpus", "ctl_only", "plain_files", "empty")}
    for path in dirs.values():
        path.mkdir()
    try:
        for minor in (0, 1):
            os.mknod(str(dirs["gpus"] / ("nvidia%d" % minor)), stat.S_IFCHR | 0o666, os.makedev(195, minor))
        for path in (dirs["gpus"] / "nvidiactl", dirs["ctl_only"] / "nvidiactl"):
            os.mknod(str(path), stat.S_IFCHR | 0o666, os.makedev(195, 255))
    except (OSError, AttributeError) as exc:
        pytest.skip("cannot create character devices here (mknod needs CAP_MKNOD): %s" % exc)
    (dirs["plain_files"] / "nvidia0").write_text(u"stand-in, not a device\n")
    (dirs["plain_files"] / "nvidia1").write_text(u"stand-in, not a device\n")
    return dirs


def test_device_nodes_are_required(tmp_path):
    dirs = plant(tmp_path)
    cases = [{"id": name, "dev_dir": str(path), "require_gpus": True} for name, path in sorted(dirs.items())]
    cases.append({"id": "not_required", "dev_dir": str(dirs["empty"]), "require_gpus": False})
    results = run_harness(tmp_path, "gpu_preflight_devices.yml", cases)
    assert results["gpus"] == "accepted" and results["not_required"] == "accepted"
    for name in ("ctl_only", "empty"):
        msg = " ".join(results[name].split())
        assert msg.startswith("host localhost: no NVIDIA device nodes in %s: no %s/nvidia<minor> character device, "
                              "so no process here can open a GPU. " % (dirs[name], dirs[name])), msg
        assert FIX in msg and msg.endswith("Nothing was changed."), msg
    msg = " ".join(results["plain_files"].split())
    assert ("no %s/nvidia<minor> character device (%s/nvidia0, %s/nvidia1 exist but are not character devices)"
            % ((dirs["plain_files"],) * 3)) in msg, msg


def test_the_role_finds_the_names_of_the_compliance_rule():
    # one rule for both: the role's find pattern is _host_readings.NVIDIA_GPU_NODE
    with open(ROLE_TASKS) as handle:
        assert "patterns: '%s'" % NVIDIA_GPU_NODE in handle.read()


def test_a_host_without_systemd_is_refused(tmp_path):
    """tasks/systemd.yml: systemd's runtime directory (sd_booted(3)) must exist; planted in tmp_path."""
    booted = tmp_path / "run-systemd-system"
    booted.mkdir()
    (tmp_path / "a-file").write_text(u"not a directory\n")
    cases = [{"id": "booted", "tasks_from": "systemd", "runtime_dir": str(booted)},
             {"id": "missing", "tasks_from": "systemd", "runtime_dir": str(tmp_path / "none")},
             {"id": "file", "tasks_from": "systemd", "runtime_dir": str(tmp_path / "a-file")}]
    results = run_harness(tmp_path, "gpu_preflight_devices.yml", cases)
    assert results["booted"] == "accepted"
    for name, path in (("missing", tmp_path / "none"), ("file", tmp_path / "a-file")):
        msg = " ".join(results[name].split())
        assert msg.startswith("host localhost: not booted with systemd (%s is not a directory; service manager: " % path), msg
        assert "the vLLM instances run as systemd units, so nothing could be served here" in msg, msg
        assert "or set gpu_preflight_require_systemd: false" in msg and msg.endswith("Nothing was changed."), msg
