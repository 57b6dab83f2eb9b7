# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpu_compliance run as Ansible runs it (subprocess, args file), given the real gpu_topology facts
of the 2x H200 host (tests/fixtures/real/h200x2_nvlink/results/gpu_topology_facts.json) and the
roles' records (local facts) planted in tmp_path. The checks themselves are tested in
module_utils/test_compliance*.py; here: the mode, the records read, parameter errors, the layout
request and the order of the catalog. The molecule scenario `compliance` runs the module on a
converged simulated host."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import stat

import pytest

from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import fixture_text, run_module

TOPOLOGY = json.loads(fixture_text("real/h200x2_nvlink/results/gpu_topology_facts.json"))
QWEN7B = json.loads(fixture_text("models/Qwen2.5-7B-Instruct/config.json"))
CATALOG_ORDER = ["gpu_driver", "gpu_devices", "gpu_count", "ecc_mode", "ecc_uncorrectable", "ecc_remap", "persistence_mode",
                 "nvlink",
                 "fabric_manager", "kernel_log", "dcgm_diag", "layout", "packages", "nccl_effective", "sysctl", "governor",
                 "logrotate", "cron", "systemd", "units", "vllm_stack"]


# What the roles record (written by hand in the form of roles/*/tasks/record.yml).
CUDA_RECORD = {"recorded_by": "gpu_fleet.vllm_serving.cuda_stack", "cuda_version": "12.1",
               "cuda_package": "cuda-toolkit-12-1", "toolkit_version": "12.1.1-1", "min_driver": "530.30.02",
               "install_nccl": True, "nccl_install_method": "apt", "nccl_version": "2.14.3",
               "nccl_build": "2.14.3-1+cuda11.7", "nccl_release": "2.14.3", "nccl_cuda": "11.7",
               "nccl_library": "/usr/lib/x86_64-linux-gnu/libnccl.so.2.14.3",
               "pins": {"cuda-toolkit-12-1": "12.1.1-1", "libnccl2": "2.14.3-1+cuda11.7",
                        "libnccl-dev": "2.14.3-1+cuda11.7"},
               "holds": ["cuda-toolkit-12-1", "libnccl-dev", "libnccl2"]}


def vllm_record(tmp_path, active="full"):
    return {"recorded_by": "gpu_fleet.vllm_serving.vllm_server", "config_dir": str(tmp_path / "etc-vllm"),
            "venv": str(tmp_path / "venv"), "service_user": "vllm", "unit_template": "/etc/systemd/system/vllm@.service",
            "active_layout": active, "layouts": [
                {"layout": "full", "unit": "vllm", "target": "vllm.target", "env_dir": str(tmp_path / "etc-vllm"),
                 "instances": [{"name": "n0-0", "gpus": [0, 1], "port": 8001, "numa_node": 0,
                                "tensor_parallel_size": 2, "pipeline_parallel_size": 1}]},
                {"layout": "degraded", "unit": "vllm-degraded", "target": "vllm-degraded.target",
                 "env_dir": str(tmp_path / "etc-vllm" / "degraded"),
                 "instances": [{"name": "n0-0", "gpus": [0], "port": 8101, "numa_node": 0,
                                "tensor_parallel_size": 1, "pipeline_parallel_size": 1}]}]}


def record(tmp_path, role, content):
    facts = tmp_path / "facts"
    facts.mkdir(exist_ok=True)
    (facts / ("gpu_fleet_%s.fact" % role)).write_text(content if isinstance(content, str) else json.dumps(content))


def plant_host(tmp_path, minors=(0, 1)):
    """A /dev with the NVIDIA nodes of the 2x H200 (character devices 195:<minor>, as the driver
    makes them) and systemd's runtime directory, as on a host that can serve."""
    dev = tmp_path / "dev"
    if not dev.exists():
        dev.mkdir()
        (tmp_path / "run-systemd-system").mkdir()
        try:
            for minor in minors:
                os.mknod(str(dev / ("nvidia%d" % minor)), stat.S_IFCHR | 0o666, os.makedev(195, minor))
            os.mknod(str(dev / "nvidiactl"), stat.S_IFCHR | 0o666, os.makedev(195, 255))
        except (OSError, AttributeError) as exc:
            pytest.skip("cannot create character devices here (mknod needs CAP_MKNOD): %s" % exc)
    return {"dev_dir": str(dev), "systemd_runtime_dir": str(tmp_path / "run-systemd-system")}


def check(tmp_path, **extra):
    args = {"topology": TOPOLOGY, "host": "gpu01", "kernel_log": "none", "health_check": False,
            "expected_gpu_count": 2, "facts_dir": str(tmp_path / "facts")}
    if "dev_dir" not in extra or "systemd_runtime_dir" not in extra:
        args.update(plant_host(tmp_path))
    args.update(extra)
    return run_module(tmp_path, "gpu_compliance", args, check_mode=True)


def by_id(result, check_id):
    return [f for f in result["findings"] if f["id"] == check_id]


def statuses(result, check_id):
    return [f["status"] for f in result["findings"] if f["id"] == check_id]


def test_auto_before_deployment_is_pre_deploy(tmp_path):
    rc, res = check(tmp_path, model_config=QWEN7B, model_name="Qwen/Qwen2.5-7B-Instruct")
    assert rc == 0 and res["changed"] is False
    assert res["summary"]["mode"] == "pre_deploy" and res["readings"]["mode"] == "pre_deploy"
    assert not res.get("deprecations")
    assert res["summary"]["compliant"] is True
    # nothing recorded yet: the units are "not applied" (a warning), the layout is planned
    assert statuses(res, "layout") == ["pass"] and statuses(res, "units") == ["not_applied"]
    # the planned instances stand in for the deployed ones
    assert [i["name"] for i in res["readings"]["instances"]] == ["n0-0", "n0-1"]


def test_auto_with_the_vllm_server_record_is_post_deploy(tmp_path):
    record(tmp_path, "vllm_server", vllm_record(tmp_path))
    record(tmp_path, "housekeeping", {"logrotate_config": str(tmp_path / "logrotate-vllm"),
                                      "cron_file": str(tmp_path / "cron-cleanup")})
    rc, res = check(tmp_path)
    assert rc == 0 and res["summary"]["mode"] == "post_deploy"
    # deployed, but the files housekeeping recorded are not there: both fail, the host is not compliant
    assert statuses(res, "logrotate") == ["fail"] and statuses(res, "cron") == ["fail"]
    assert str(tmp_path / "cron-cleanup") + " missing" in by_id(res, "cron")[0]["actual"]
    assert res["summary"]["compliant"] is False
    # the deployed instances are the recorded ones (active layout full)
    assert [(i["name"], i["gpus"], i["port"]) for i in res["readings"]["instances"]] == [("n0-0", [0, 1], 8001)]
    assert res["readings"]["records"] == {"cuda_stack": False, "host_tuning": False, "housekeeping": True,
                                          "vllm_server": True}


def test_a_bare_host_reports_not_applied_with_the_pin_rules_values(tmp_path):
    # nothing recorded: every check of what a role applies warns "not applied", none passes; the
    # expected values are the pin rules' for the inventory's cuda_stack settings (here NCCL 2.18.3)
    rc, res = check(tmp_path, cuda_stack={"nccl_version": "2.18.3"})
    assert rc == 0 and res["summary"]["mode"] == "pre_deploy" and res["summary"]["compliant"] is True
    for check_id in ("packages", "nccl_effective", "sysctl", "governor", "logrotate", "cron", "units"):
        assert statuses(res, check_id) and set(statuses(res, check_id)) == {"not_applied"}, check_id
        assert all(f["severity"] == "warn" for f in by_id(res, check_id))
    assert [(f["subject"], f["expected"]) for f in by_id(res, "packages")] == [
        ("cuda-toolkit-12-1", "12.1.1-1 installed and held"), ("libnccl-dev", "2.18.3-1+cuda12.1 installed and held"),
        ("libnccl2", "2.18.3-1+cuda12.1 installed and held")]
    assert by_id(res, "nccl_effective")[0]["expected"] == "NCCL 2.18.3+cuda12.1"
    assert by_id(res, "gpu_driver")[0]["expected"] == ">= 530.30.02"
    assert res["summary"]["status"] == "warn" and "packages" in res["summary"]["warned_checks"]
    assert res["readings"]["pins"]["source"] == "pin rules"


def test_recorded_pins_are_the_expected_ones_and_are_compared_with_the_inventory(tmp_path):
    record(tmp_path, "cuda_stack", CUDA_RECORD)
    record(tmp_path, "vllm_server", vllm_record(tmp_path))
    rc, res = check(tmp_path, cuda_stack={"nccl_version": "2.18.3"})
    assert rc == 0 and res["readings"]["pins"]["source"] == "record"
    pkgs = by_id(res, "packages")
    # the recorded pins are judged (this machine has none of them installed) ...
    assert [(f["subject"], f["expected"]) for f in pkgs[:3]] == [
        ("cuda-toolkit-12-1", "12.1.1-1 installed and held"), ("libnccl-dev", "2.14.3-1+cuda11.7 installed and held"),
        ("libnccl2", "2.14.3-1+cuda11.7 installed and held")]
    assert {f["status"] for f in pkgs[:3]} <= {"fail", "not_applicable"}
    # ... and differ from what the inventory asks for: a failure after the rollout
    drift = pkgs[3]
    assert (drift["subject"], drift["status"]) == ("cuda_stack record", "fail")
    assert "libnccl2=2.18.3-1+cuda12.1" in drift["expected"] and "libnccl2=2.14.3-1+cuda11.7" in drift["actual"]


def test_units_follow_the_recorded_active_layout(tmp_path):
    record(tmp_path, "vllm_server", vllm_record(tmp_path, active="degraded"))
    rc, res = check(tmp_path)
    assert rc == 0 and [(i["name"], i["port"]) for i in res["readings"]["instances"]] == [("n0-0", 8101)]
    subjects = [f["subject"] for f in by_id(res, "units")]
    # this machine may or may not run systemd: either the degraded layout's units are judged or none
    assert subjects in (["vllm-degraded.target", "vllm-degraded@n0-0"], ["host"]), subjects


def test_unreadable_records_warn_and_count_as_absent(tmp_path):
    record(tmp_path, "host_tuning", u"{not json")
    record(tmp_path, "cuda_stack", u"[1, 2]")
    rc, res = check(tmp_path)
    assert rc == 0
    sysctl = by_id(res, "sysctl")
    assert sysctl[0]["status"] == "warn" and "gpu_fleet_host_tuning.fact is not valid JSON" in sysctl[0]["actual"]
    assert sysctl[1]["status"] == "not_applied"
    pkgs = by_id(res, "packages")
    assert pkgs[0]["status"] == "warn" and "gpu_fleet_cuda_stack.fact is not valid JSON" in pkgs[0]["actual"]
    assert {f["status"] for f in pkgs[1:]} == {"not_applied"}


@pytest.mark.parametrize("mode", ["pre_deploy", "preflight"])
def test_pre_deploy_and_its_deprecated_alias_preflight(tmp_path, mode):
    record(tmp_path, "vllm_server", vllm_record(tmp_path))   # would be post_deploy under auto
    record(tmp_path, "housekeeping", {"logrotate_config": str(tmp_path / "logrotate-vllm"), "cron_file": ""})
    rc, res = check(tmp_path, mode=mode)
    assert rc == 0 and res["summary"]["mode"] == "pre_deploy" and res["readings"]["mode"] == "pre_deploy"
    assert statuses(res, "units") == ["not_applicable"] and statuses(res, "logrotate") == ["not_applicable"]
    assert by_id(res, "cron")[0]["actual"] == "turned off in housekeeping"
    deprecations = json.dumps(res.get("deprecations") or [])   # its form differs between ansible-core releases
    if mode == "preflight":
        assert "gpu_compliance: mode=preflight is a deprecated alias; use mode=pre_deploy" in deprecations
        assert "1.0.0" in deprecations
    else:
        assert deprecations == "[]"


def test_findings_come_in_catalog_order(tmp_path):
    rc, res = check(tmp_path, model_config=QWEN7B)
    ids = []
    for item in res["findings"]:
        if item["id"] not in ids:
            ids.append(item["id"])
    assert ids == CATALOG_ORDER


@pytest.mark.parametrize("extra, text", [
    ({"layout": "not json"}, "layout must be 'auto' or a list of instances, got 'not json'"),
    ({"model_path": "/nonexistent/model"}, "no config.json at /nonexistent/model on gpu01 and no model_config"),
])
def test_layout_request_errors_fail_the_layout_check(tmp_path, extra, text):
    args = dict({"model_config": QWEN7B}, **extra)
    if "model_path" in extra:
        args.pop("model_config")
    rc, res = check(tmp_path, **args)
    layout = [f for f in res["findings"] if f["id"] == "layout"]
    assert rc == 0 and layout[0]["status"] == "fail" and text in layout[0]["actual"], layout


@pytest.mark.parametrize("extra, text", [
    ({"expected_gpu_count": -1}, "expected_gpu_count must be >= 0 (0 = do not judge), got -1"),
    ({"packages": {"libnccl2": ""}}, "packages.libnccl2 must be an exact apt version string"),
    ({"cuda_stack": {"nccl_version": "2.14"}}, "cuda_stack.nccl_version must be an NCCL version x.y.z"),
    ({"cuda_stack": {"nccl_build": "2.14.3"}}, "cuda_stack.nccl_build must be a full NCCL build such as 2.14.3-1+cuda11.7"),
    ({"cuda_stack": {"cuda_version": "11.8"}}, "cuda_stack: cuda_stack_cuda_version '11.8' is not in the compatibility table"),
    ({"mode": "later"}, "value of mode must be one of"),
])
def test_bad_parameters_fail_naming_host_and_value(tmp_path, extra, text):
    rc, res = check(tmp_path, **extra)
    assert rc == 1 and res["failed"] is True and text in res["msg"], res["msg"]
    if "mode" not in extra:
        assert res["msg"].startswith("gpu_compliance on gpu01: ")


# --- a host on which nothing can be served ---------------------------------------------------

def test_no_systemd_fails_the_host(tmp_path):
    # the real H200 VM: no systemd as PID 1 (setup: service_mgr process_api); everything else may pass
    rc, res = check(tmp_path, systemd_runtime_dir=str(tmp_path / "no-such-dir"), model_config=QWEN7B)
    assert rc == 0 and res["summary"]["compliant"] is False
    assert res["summary"]["failed_checks"] == ["systemd"]
    f = by_id(res, "systemd")[0]
    assert (f["status"], f["expected"]) == ("fail", "systemd as PID 1")
    assert f["actual"].startswith("not booted with systemd (no %s)" % (tmp_path / "no-such-dir"))
    assert "systemd units" in f["remediation"] and "/sbin/init" in f["remediation"]
    assert res["readings"]["systemd"] is False


def test_with_systemd_and_device_nodes_both_pass(tmp_path):
    rc, res = check(tmp_path, model_config=QWEN7B)
    assert rc == 0 and res["summary"]["compliant"] is True
    assert statuses(res, "systemd") == ["pass"] and statuses(res, "gpu_devices") == ["pass"]
    assert by_id(res, "gpu_devices")[0]["actual"] == "nvidia0, nvidia1"
    assert res["readings"]["device_nodes"] == ["nvidia0", "nvidia1"]


def test_no_device_nodes_fails_the_host(tmp_path):
    plant_host(tmp_path)
    empty = tmp_path / "empty-dev"
    empty.mkdir()
    (empty / "null").write_text("")
    rc, res = check(tmp_path, dev_dir=str(empty), systemd_runtime_dir=str(tmp_path / "run-systemd-system"))
    assert rc == 0 and res["summary"]["compliant"] is False and res["summary"]["failed_checks"] == ["gpu_devices"]
    f = by_id(res, "gpu_devices")[0]
    assert (f["status"], f["actual"]) == ("fail", "no NVIDIA device nodes")
    assert f["expected"] == "%s/nvidia<minor> character device per GPU" % empty
    assert "modprobe nvidia" in f["remediation"] and "nvidia-modprobe" in f["remediation"]
    assert "--device /dev/nvidia<minor>" in f["remediation"]


def test_plain_files_named_like_device_nodes_do_not_count(tmp_path):
    plant_host(tmp_path)
    fake = tmp_path / "fake-dev"
    fake.mkdir()
    for name in ("nvidia0", "nvidia10", "nvidia1"):
        (fake / name).write_text("not a device\n")
    rc, res = check(tmp_path, dev_dir=str(fake), systemd_runtime_dir=str(tmp_path / "run-systemd-system"))
    assert by_id(res, "gpu_devices")[0]["actual"] == "no NVIDIA device nodes (nvidia0, nvidia1, nvidia10: not character devices)"


def test_a_gpu_without_its_node_fails(tmp_path):
    # nvidia-smi lists GPUs 0 and 1 (minor numbers 0, 1); only /dev/nvidia0 was passed through
    plant_host(tmp_path)
    one = tmp_path / "one-dev"
    one.mkdir()
    os.mknod(str(one / "nvidia0"), stat.S_IFCHR | 0o666, os.makedev(195, 0))
    rc, res = check(tmp_path, dev_dir=str(one), systemd_runtime_dir=str(tmp_path / "run-systemd-system"))
    assert [(f["subject"], f["status"], f["expected"], f["actual"]) for f in by_id(res, "gpu_devices")] == [
        ("GPU 1", "fail", "%s/nvidia1" % one, "missing (present: nvidia0)")]


# --- vllm_stack's reader of an instance log across logrotate's rotations (issue 17 review) ---------

class _FakeModule(object):
    params = {"systemd_runtime_dir": "/nonexistent-systemd"}

    def get_bin_path(self, *_args, **_kwargs):
        return None


def _gatherer():
    from ansible_collections.gpu_fleet.vllm_serving.plugins.modules import gpu_compliance
    return gpu_compliance.Gatherer(_FakeModule(), "gpu01")


START_063 = "INFO 12-02 10:00:01 api_server.py:528] vLLM API server version 0.6.3.post1\n"
NCCL_063 = "INFO 12-02 10:00:09 pynccl.py:63] vLLM is using nccl==2.14.3\n"


def test_instance_log_reads_back_through_rotations(tmp_path):
    import gzip
    log = tmp_path / "n0-0.log"
    # housekeeping's logrotate (copytruncate, delaycompress): the start is two rotations back
    (tmp_path / "n0-0.log.2.gz").write_bytes(gzip.compress((START_063 + NCCL_063).encode()))
    (tmp_path / "n0-0.log.1").write_text("INFO ... Avg prompt throughput: 1.0 tokens/s\n")
    log.write_text("INFO ... Avg prompt throughput: 2.0 tokens/s\n")
    text, error = _gatherer().instance_log(str(log), None)
    assert error is None and text.index("vLLM is using nccl==2.14.3") < text.index("2.0 tokens/s")


def test_instance_log_stops_at_the_live_start(tmp_path):
    log = tmp_path / "n0-0.log"
    (tmp_path / "n0-0.log.1").write_text("OLD " + START_063)
    log.write_text(START_063 + NCCL_063)
    text, error = _gatherer().instance_log(str(log), None)
    assert error is None and "OLD" not in text


def test_instance_log_link_is_not_followed(tmp_path):
    target = tmp_path / "secret"
    target.write_text("root only")
    (tmp_path / "n0-0.log").symlink_to(target)
    text, error = _gatherer().instance_log(str(tmp_path / "n0-0.log"), None)
    assert text is None and "symbolic link" in error
