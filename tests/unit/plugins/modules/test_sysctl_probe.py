# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""sysctl_probe run as Ansible runs it (subprocess, args file) against a writable sysctl tree
planted in tmp_path: the simulated hosts mount /proc/sys read-only, so the writable path (the
probe writes a key's own value back) is only exercised here."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import run_module


def plant(tmp_path):
    proc = tmp_path / "proc_sys"
    (proc / "vm").mkdir(parents=True)
    (proc / "vm" / "swappiness").write_text("60\n")
    outside = tmp_path / "outside"
    outside.write_text("precious\n")
    return proc, outside


def run_probe(tmp_path, keys, proc_root, check_mode=False, persisted_file=None, wanted=None):
    args = {"keys": keys, "proc_root": str(proc_root)}
    if wanted is not None:
        args["wanted"] = wanted
    if persisted_file is not None:
        args["persisted_file"] = str(persisted_file)
    return run_module(tmp_path, "sysctl_probe", args, check_mode)


def test_existing_key_is_settable_and_unchanged(tmp_path):
    proc, dummy = plant(tmp_path)
    rc, res = run_probe(tmp_path, ["vm.swappiness"], proc)
    assert rc == 0 and res["changed"] is False
    assert res["probes"]["vm.swappiness"] == {"present": True, "value": "60", "settable": True, "reason": None}
    assert (proc / "vm" / "swappiness").read_text() == "60\n"


def test_unknown_key_is_absent_not_failed(tmp_path):
    proc, dummy = plant(tmp_path)
    rc, res = run_probe(tmp_path, ["vm.does_not_exist"], proc)
    assert rc == 0
    probe = res["probes"]["vm.does_not_exist"]
    assert probe["present"] is False and probe["settable"] is False
    assert probe["reason"].startswith("absent: ")


def test_directory_is_not_a_key(tmp_path):
    proc, dummy = plant(tmp_path)
    rc, res = run_probe(tmp_path, ["vm"], proc)
    assert rc == 0
    assert res["probes"]["vm"]["settable"] is False and res["probes"]["vm"]["reason"].startswith("invalid: ")


def test_keys_leaving_proc_root_are_invalid_and_never_written(tmp_path):
    proc, outside = plant(tmp_path)
    keys = ["vm/../../outside", "vm..swappiness", "vm/./swappiness"]
    for check_mode in (True, False):
        rc, res = run_probe(tmp_path, keys, proc, check_mode=check_mode)
        assert rc == 0
        for key in keys:
            assert res["probes"][key]["settable"] is False, (key, res["probes"][key])
            assert res["probes"][key]["reason"].startswith("invalid: "), (key, res["probes"][key])
    assert outside.read_text() == "precious\n"


def test_persisted_file_keys_are_read_in_sysctl_d_syntax(tmp_path):
    proc, dummy = plant(tmp_path)
    dropin = tmp_path / "90-gpu-fleet.conf"
    # The header ansible.posix.sysctl leaves alone, its key=value lines, and sysctl.d(5) forms:
    # spaces around '=', '-' prefix, slash separators, ';' comments, a repeated key (last wins).
    dropin.write_text("# Managed by gpu_fleet.vllm_serving.host_tuning.\n"
                      "vm.swappiness=10\n"
                      "; net.core.rmem_max=1\n"
                      " -kernel.numa_balancing = 0\n"
                      "net/core/somaxconn = 4096\n"
                      "vm.swappiness = 1\n"
                      "not a setting\n")
    rc, res = run_probe(tmp_path, ["vm.swappiness"], proc, persisted_file=dropin)
    assert rc == 0 and res["changed"] is False
    assert res["persisted"] == {"vm.swappiness": "1", "kernel.numa_balancing": "0", "net.core.somaxconn": "4096"}


def test_missing_persisted_file_reads_as_empty(tmp_path):
    proc, dummy = plant(tmp_path)
    rc, res = run_probe(tmp_path, ["vm.swappiness"], proc, persisted_file=tmp_path / "absent.conf")
    assert rc == 0 and res["persisted"] == {}


def test_unreadable_persisted_file_fails_cleanly(tmp_path):
    proc, dummy = plant(tmp_path)
    rc, res = run_probe(tmp_path, ["vm.swappiness"], proc, persisted_file=tmp_path)  # a directory: EISDIR
    assert rc == 1 and res["failed"] is True
    assert str(tmp_path) in res["msg"] and "persisted_file" in res["msg"]


NO_NUMA_BALANCING = ("this kernel has no automatic NUMA balancing (built without CONFIG_NUMA_BALANCING): "
                     "nothing to turn off")


def test_absent_numa_balancing_is_as_wanted_when_off_is_wanted(tmp_path):
    # a kernel without NUMA balancing has no /proc/sys/kernel/numa_balancing: nothing to turn off
    proc, dummy = plant(tmp_path)
    keys = ["kernel.numa_balancing", "vm.swappiness", "net.core.rmem_max"]
    for check_mode in (True, False):
        rc, res = run_probe(tmp_path, keys, proc, check_mode=check_mode,
                            wanted={"kernel.numa_balancing": 0, "vm.swappiness": "60", "net.core.rmem_max": 33554432})
        assert rc == 0
        numa = res["probes"]["kernel.numa_balancing"]
        assert (numa["present"], numa["settable"], numa["satisfied"]) == (False, False, True)
        assert numa["note"] == NO_NUMA_BALANCING and numa["reason"].startswith("absent: ")
        # the live value equals the wanted one: satisfied, no note
        assert (res["probes"]["vm.swappiness"]["satisfied"], res["probes"]["vm.swappiness"]["note"]) == (True, None)
        # absent for another reason (here: no such key in this tree): not as wanted
        assert (res["probes"]["net.core.rmem_max"]["satisfied"], res["probes"]["net.core.rmem_max"]["note"]) == (False, None)
    assert not (proc / "kernel").exists()


@pytest.mark.parametrize("wanted", [{"kernel.numa_balancing": 1}, {}])
def test_absent_numa_balancing_cannot_be_on(tmp_path, wanted):
    # wanting automatic NUMA balancing ON on such a kernel is not satisfied; a key not named in
    # wanted is not judged
    proc, dummy = plant(tmp_path)
    rc, res = run_probe(tmp_path, ["kernel.numa_balancing"], proc, wanted=wanted)
    numa = res["probes"]["kernel.numa_balancing"]
    assert rc == 0 and numa["note"] is None
    assert numa["satisfied"] is (False if wanted else None)


def test_present_numa_balancing_on_is_not_as_wanted(tmp_path):
    proc, dummy = plant(tmp_path)
    (proc / "kernel").mkdir()
    (proc / "kernel" / "numa_balancing").write_text("1\n")
    rc, res = run_probe(tmp_path, ["kernel.numa_balancing"], proc, check_mode=True, wanted={"kernel.numa_balancing": 0})
    numa = res["probes"]["kernel.numa_balancing"]
    assert rc == 0 and (numa["present"], numa["value"], numa["satisfied"], numa["note"]) == (True, "1", False, None)


def test_without_wanted_the_probe_is_as_before(tmp_path):
    proc, dummy = plant(tmp_path)
    rc, res = run_probe(tmp_path, ["kernel.numa_balancing"], proc)
    assert rc == 0 and "satisfied" not in res["probes"]["kernel.numa_balancing"]
