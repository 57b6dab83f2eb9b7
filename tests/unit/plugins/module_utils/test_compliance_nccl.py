# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Check nccl_effective: which NCCL each vLLM instance loads, against the pin.

The libraries are those nccl_facts reported on the real 2x H200 host
(tests/fixtures/real/h200x2_nvlink/results/nccl_facts.out): system libnccl 2.28.3+cuda13.0,
torch's bundled 2.28.9+cuda13.0 -- the real split a system pin runs into. The instances (which
env file sets VLLM_NCCL_SO_PATH) are planted; expected findings were written from the rule
"fail when an instance would load an NCCL other than the pinned one", not by running the check.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import yaml

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _compliance as c
from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import fixture_text

H = "gpu01"
VENV = "/opt/torch/.venv"
TORCH_LIB = "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2"
SYSTEM_LIB = "/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3"


def real_facts():
    text = fixture_text("real/h200x2_nvlink/results/nccl_facts.out")
    return yaml.safe_load(text.split("=>", 1)[1])["ansible_facts"]["nccl"]


def with_instances(**so_paths):
    """Instances as nccl_facts builds them: VLLM_NCCL_SO_PATH -> that library, else torch's."""
    facts = real_facts()
    for name, so_path in so_paths.items():
        effective = dict(facts["system"], path=so_path) if so_path else facts["venvs"][VENV]
        facts["instances"]["/etc/vllm/%s.env" % name] = {
            "nccl_so_path": so_path, "effective": effective, "uses_pinned": bool(so_path)}
    return facts


def test_real_capture_is_the_split():
    facts = real_facts()
    assert (facts["system"]["version"], facts["system"]["cuda"]) == ("2.28.3", "13.0")
    assert facts["venvs"][VENV]["version"] == "2.28.9"


def test_instance_on_torch_bundled_nccl_fails():
    findings = c.check_nccl_effective(H, with_instances(**{"n0-0": None, "n1-0": "/lib/x86_64-linux-gnu/libnccl.so.2"}),
                                      "2.28.3", "13.0", VENV)
    assert [(f["subject"], f["status"]) for f in findings] == [("vllm@n0-0", "fail"), ("vllm@n1-0", "pass")]
    bad = findings[0]
    assert bad["host"] == H and bad["expected"] == "NCCL 2.28.3+cuda13.0"
    assert bad["actual"] == ("torch's bundled NCCL in /opt/torch/.venv (VLLM_NCCL_SO_PATH unset) loads %s "
                             "(NCCL 2.28.9+cuda13.0)" % TORCH_LIB)
    assert bad["remediation"].startswith("Set vllm_server_nccl_so_path: /lib/x86_64-linux-gnu/libnccl.so.2 "
                                         "(the pinned system library, NCCL 2.28.3+cuda13.0)")
    assert findings[1]["actual"] == ("VLLM_NCCL_SO_PATH=/lib/x86_64-linux-gnu/libnccl.so.2 loads %s "
                                     "(NCCL 2.28.3+cuda13.0)" % SYSTEM_LIB)


def test_pin_not_installed_says_install_it_first():
    # the project's pin (2.14.3) on the real host: nothing there is 2.14.3
    findings = c.check_nccl_effective(H, with_instances(**{"n0-0": "/lib/x86_64-linux-gnu/libnccl.so.2"}),
                                      "2.14.3", "11.7", VENV)
    assert [f["status"] for f in findings] == ["fail"]
    assert findings[0]["remediation"].startswith(
        "Re-run site.yml --tags cuda_stack to install the pinned NCCL 2.14.3 (the system library is "
        "NCCL 2.28.3+cuda13.0)")


def test_other_cuda_build_of_the_pinned_version_fails():
    findings = c.check_nccl_effective(H, with_instances(**{"n0-0": "/lib/x86_64-linux-gnu/libnccl.so.2"}),
                                      "2.28.3", "12.1", VENV)
    assert findings[0]["status"] == "fail"
    # without a pinned CUDA only the version counts
    assert c.check_nccl_effective(H, with_instances(**{"n0-0": "/lib/x86_64-linux-gnu/libnccl.so.2"}),
                                  "2.28.3", None, VENV)[0]["status"] == "pass"


def test_missing_library_and_no_bundled_nccl_fail():
    facts = with_instances(**{"n0-0": "/opt/nccl/lib/libnccl.so.2"})
    facts["instances"]["/etc/vllm/n0-0.env"]["effective"] = {
        "path": "/opt/nccl/lib/libnccl.so.2", "realpath": None, "version": None, "cuda": None,
        "version_source": None, "error": "/opt/nccl/lib/libnccl.so.2 does not exist"}
    facts["instances"]["/etc/vllm/n1-0.env"] = {"nccl_so_path": None, "effective": None, "uses_pinned": False}
    findings = c.check_nccl_effective(H, facts, "2.28.3", None, "/opt/vllm/venv")
    assert [(f["subject"], f["status"], f["actual"]) for f in findings] == [
        ("vllm@n0-0", "fail", "VLLM_NCCL_SO_PATH=/opt/nccl/lib/libnccl.so.2: /opt/nccl/lib/libnccl.so.2 does not exist"),
        ("vllm@n1-0", "fail", "torch's bundled NCCL in /opt/vllm/venv (VLLM_NCCL_SO_PATH unset): no libnccl.so.2 found"),
    ]


def test_unreadable_version_warns():
    facts = with_instances(**{"n0-0": "/lib/x86_64-linux-gnu/libnccl.so.2"})
    facts["instances"]["/etc/vllm/n0-0.env"]["effective"]["version"] = None
    assert c.check_nccl_effective(H, facts, "2.28.3", None, VENV)[0]["status"] == "warn"


def test_not_applicable_before_vllm_is_installed():
    for facts, deployed, why in ((real_facts(), True, "not deployed (no vLLM instance environment files)"),
                                 (real_facts(), False, "not deployed (vLLM not installed yet)"),
                                 (None, True, "NCCL libraries not readable here (no ldconfig)")):
        findings = c.check_nccl_effective(H, facts, "2.28.3", None, VENV, deployed=deployed)
        assert [(f["status"], f["severity"], f["actual"]) for f in findings] == [("not_applicable", "info", why)]
    assert c.check_nccl_effective(H, real_facts(), "", None, VENV)[0]["actual"] == "no pinned NCCL version given"


def test_not_applied_while_a_role_has_recorded_nothing():
    # cuda_stack (the pin) or vllm_server (the instances) recorded nothing yet: a warning that
    # names the role, with the expected build of the pin rules; even the real facts do not pass
    for role in ("cuda_stack", "vllm_server"):
        out = c.check_nccl_effective(H, with_instances(**{"n0-0": SYSTEM_LIB}), "2.14.3", "11.7", VENV,
                                     deployed=True, missing_record=role)
        assert [(f["status"], f["severity"], f["expected"], f["actual"]) for f in out] == [
            ("not_applied", "warn", "NCCL 2.14.3+cuda11.7",
             "not applied: %s has recorded nothing on this host" % role)]


# --- the plan chose torch's own NCCL (the pin is below the release's NCCL floor, issue 17) ---------

TORCH_CHOICE = {"choice": "torch", "version": "2.29.7",
                "why": "the NCCL 2.14.3 pin does not reach vLLM 0.32.0: its NCCL wrapper needs NCCL >= 2.29.7"}


def test_torch_choice_passes_instances_without_a_library():
    nccl = {"instances": {"/etc/vllm/n0-0.env": {"nccl_so_path": None,
                                                 "effective": {"version": "2.29.7", "cuda": "13.0"}}}}
    out = c.check_nccl_effective("gpu01", nccl, "2.14.3", venv="/opt/vllm/venv", choice=TORCH_CHOICE)
    assert [(f["status"], f["subject"], f["actual"]) for f in out] == [
        ("pass", "vllm@n0-0", "torch's bundled NCCL in /opt/vllm/venv (NCCL 2.29.7+cuda13.0)")]
    assert out[0]["expected"].startswith("torch's own NCCL (the plan: the NCCL 2.14.3 pin does not reach vLLM 0.32.0")


def test_torch_choice_fails_an_instance_given_the_pin():
    nccl = {"instances": {"/etc/vllm/n0-0.env": {"nccl_so_path": "/usr/lib/x86_64-linux-gnu/libnccl.so.2",
                                                 "effective": {"version": "2.14.3"}}}}
    out = c.check_nccl_effective("gpu01", nccl, "2.14.3", choice=TORCH_CHOICE)
    assert [(f["status"], f["actual"]) for f in out] == [("fail", "VLLM_NCCL_SO_PATH=/usr/lib/x86_64-linux-gnu/libnccl.so.2")]


def test_explicit_choice_expects_the_library_the_plan_read():
    # vLLM 0.32.0 at TP=2 with vllm_server_nccl_so_path /opt/nccl/2.29.7/lib/libnccl.so.2 (accepted by the
    # plan); the pin 2.14.3 is below that release's floor and is not what the instances should load
    choice = {"choice": "explicit", "path": "/opt/nccl/2.29.7/lib/libnccl.so.2", "version": "2.29.7"}
    nccl = {"system": {"version": "2.14.3"},
            "instances": {"/etc/vllm/n0-0.env": {"nccl_so_path": choice["path"],
                                                 "effective": {"version": "2.29.7", "path": choice["path"]}}}}
    out = c.check_nccl_effective("gpu01", nccl, "2.14.3", "12.1", choice=choice)
    assert [(f["status"], f["expected"]) for f in out] == [("pass", "NCCL 2.29.7")]
