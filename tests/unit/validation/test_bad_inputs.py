# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The bad-input sweep (issue 16): every case of bad_inputs.yml runs the role's validation entry
point the way site.yml's first play does (``import_role`` with ``tasks_from: plan`` for
vllm_server, ``validate`` for the others), in check mode on localhost, in one ansible-playbook run
(one play per case). A refused case must fail with its message; an accepted one must pass. The
entry points run on their own (nothing of the collection imported before them but common's
spec_types), as an operator's own playbook would call them. The
playbook-level refusals (an inventory without gpu_hosts, a rollback target that is not a layout)
run the real playbooks."""

import json
import os

import pytest
import yaml

from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import ROOT, cached, fixture_text, run_playbook

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "bad_inputs.yml")) as _handle:
    CASES = yaml.safe_load(_handle)["cases"]
BY_ID = dict((case["id"], case) for case in CASES)
ENTRY = {"vllm_server": "plan"}


def _base_vars():
    with open(os.path.join(HERE, "topology_a100x6_2numa.json")) as handle:
        topology = json.load(handle)
    config = json.loads(fixture_text("models/Qwen2.5-7B-Instruct/config.json"))
    return {"gpu_topology": topology,
            "vllm_server_model": {"name": "Qwen/Qwen2.5-7B-Instruct", "path": "/srv/models/Qwen2.5-7B-Instruct",
                                  "config": config}}


def _import(role, entry):
    return {"name": "%s %s" % (role, entry),
            "ansible.builtin.import_role": {"name": "gpu_fleet.vllm_serving." + role, "tasks_from": entry}}


def _record(case_id, value):
    return {"sweep_results": "{{ sweep_results | combine({%s: %s}) }}" % (json.dumps(case_id), value)}


FAILED_MSG = ("{{ (ansible_failed_result.results | default([]) | selectattr('failed', 'defined')"
              " | selectattr('failed') | map(attribute='msg') | first)"
              " if ansible_failed_result.results is defined else ansible_failed_result.msg | default('no message') }}")


def _play(case):
    variables = dict(_base_vars(), **case["vars"])
    block = [_import("common", "spec_types"),
             _import(case["role"], ENTRY.get(case["role"], "validate")),
             {"name": "Accepted", "ansible.builtin.set_fact": _record(case["id"], "'accepted'")}]
    rescue = [{"name": "Refused", "ansible.builtin.set_fact": _record(case["id"], "_msg"), "vars": {"_msg": FAILED_MSG}}]
    return {"name": "case " + case["id"], "hosts": "localhost", "gather_facts": False, "vars": variables,
            "tasks": [{"name": "Run the entry point", "block": block, "rescue": rescue}]}


def _sweep(tmp):
    results = tmp / "results.json"
    plays = [{"name": "Facts once", "hosts": "localhost", "gather_facts": True, "gather_subset": ["min"],
              "tasks": [{"name": "No results yet", "ansible.builtin.set_fact": {"sweep_results": {}}}]}]
    plays += [_play(case) for case in CASES]
    plays.append({"name": "Write the results", "hosts": "localhost", "gather_facts": False, "tasks": [
        {"name": "Write", "check_mode": False, "ansible.builtin.copy": {
            "content": "{{ sweep_results | to_json }}", "dest": str(results), "mode": "0644"}}]})
    (tmp / "sweep.yml").write_text(json.dumps(plays, indent=1))
    proc = run_playbook(tmp, tmp / "sweep.yml", "-i", "localhost,", "-c", "local", check=True)
    assert proc.returncode == 0, proc.stdout[-6000:]
    assert "Traceback" not in proc.stdout
    return json.loads(results.read_text())


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    key = json.dumps({"sweep": CASES}, sort_keys=True)
    return cached(key, lambda: _sweep(tmp_path_factory.mktemp("sweep")))


def test_ids_unique():
    assert len(BY_ID) == len(CASES)


@pytest.mark.parametrize("case_id", [c["id"] for c in CASES])
def test_case(results, case_id):
    case = BY_ID[case_id]
    got = results[case_id]
    if case.get("accepted"):
        assert got == "accepted"
        return
    assert got != "accepted", "%s was accepted" % case_id
    assert case["refused"] in got, got
    if case["by"] in ("role", "planner"):
        assert "localhost" in got, got
    if case["by"] == "role":
        assert "nothing was changed" in got.lower(), got
    if case["by"] == "spec":
        assert got.startswith("Validation of arguments failed"), got


def test_inventory_without_gpu_hosts(tmp_path):
    (tmp_path / "inventory.ini").write_text(u"[servers]\ngpu-a\n")
    proc = run_playbook(tmp_path, os.path.join(ROOT, "site.yml"), "-i", str(tmp_path / "inventory.ini"), check=True)
    assert proc.returncode != 0
    assert "The inventory has no host in the group gpu_hosts" in proc.stdout, proc.stdout
    assert "[gpu_hosts]" in proc.stdout


@pytest.mark.parametrize("target", ["degarded", "half", ""])
def test_rollback_target_refused(tmp_path, target):
    (tmp_path / "inventory.ini").write_text(u"[gpu_hosts]\nlocalhost ansible_connection=local\n")
    proc = run_playbook(tmp_path, os.path.join(ROOT, "playbooks", "rollback.yml"), "-i", str(tmp_path / "inventory.ini"),
                        "-e", "gpu_fleet_rollback_to=%s" % target, check=True)
    assert proc.returncode != 0
    assert "gpu_fleet_rollback_to is %s: it must be degraded" % json.dumps(target) in proc.stdout, proc.stdout
    assert "GPU topology facts" not in proc.stdout


def test_security_doc_table_is_the_sweep():
    from ansible_collections.gpu_fleet.vllm_serving.tests.unit.validation.render_table import DOC, doc_table, render
    with open(DOC) as handle:
        assert doc_table(handle.read()) == render(CASES), "run: python tests/unit/validation/render_table.py --write"


@pytest.mark.parametrize("target", [None, "full", "degraded"])
def test_rollback_target_accepted(tmp_path, target):
    """The check passes a good or absent target (the run then stops at the GPU facts: no GPUs here)."""
    (tmp_path / "inventory.ini").write_text(u"[gpu_hosts]\nlocalhost ansible_connection=local\n")
    extra = [] if target is None else ["-e", "gpu_fleet_rollback_to=%s" % target]
    proc = run_playbook(tmp_path, os.path.join(ROOT, "playbooks", "rollback.yml"), "-i", str(tmp_path / "inventory.ini"),
                        *extra, check=True)
    assert "TASK [Refuse a rollback target that is not a layout]" in proc.stdout, proc.stdout
    after = proc.stdout.split("TASK [Refuse a rollback target that is not a layout]")[1].split("TASK [")[0]
    assert after.split("\n", 1)[1].strip().startswith("ok: [localhost]"), proc.stdout


@pytest.mark.parametrize("extra", [[], ["-e", "gpu_fleet_restart_instances=n0-0"], ["-e", '{"gpu_fleet_restart_instances": []}'],
                                   ["-e", '{"gpu_fleet_restart_instances": [3]}']])
def test_restart_list_refused_before_anything(tmp_path, extra):
    (tmp_path / "inventory.ini").write_text(u"[gpu_hosts]\nlocalhost ansible_connection=local\n")
    proc = run_playbook(tmp_path, os.path.join(ROOT, "playbooks", "restart.yml"), "-i", str(tmp_path / "inventory.ini"),
                        *extra, check=True)
    assert proc.returncode != 0
    assert "host localhost: gpu_fleet_restart_instances is " in proc.stdout, proc.stdout
    assert "it must be a non-empty list of instance names" in proc.stdout
    assert "GPU topology facts" not in proc.stdout and "Read the layout" not in proc.stdout


def test_restart_list_accepted(tmp_path):
    """A list of names passes the first check (the run then stops at the GPU facts: no GPUs here)."""
    (tmp_path / "inventory.ini").write_text(u"[gpu_hosts]\nlocalhost ansible_connection=local\n")
    proc = run_playbook(tmp_path, os.path.join(ROOT, "playbooks", "restart.yml"), "-i", str(tmp_path / "inventory.ini"),
                        "-e", '{"gpu_fleet_restart_instances": ["n0-0"]}', check=True)
    after = proc.stdout.split("TASK [Refuse a restart list that is not a list of instance names]")[1].split("TASK [")[0]
    assert after.split("\n", 1)[1].strip().startswith("ok: [localhost]"), proc.stdout


def test_restart_without_the_record_is_refused_unless_the_layout_is_named(tmp_path):
    """No vllm_server record on the host (no site.yml run yet): which layout serves is not known."""
    (tmp_path / "inventory.ini").write_text(u"[gpu_hosts]\nlocalhost ansible_connection=local\n")
    facts = tmp_path / "facts.d"
    facts.mkdir()
    base = ["-i", str(tmp_path / "inventory.ini"), "-e", '{"gpu_fleet_restart_instances": ["n0-0"]}',
            "-e", "gpu_fleet_facts_dir=%s" % facts]
    proc = run_playbook(tmp_path, os.path.join(ROOT, "playbooks", "restart.yml"), *base, check=True)
    assert proc.returncode != 0
    assert "gpu_fleet_vllm_server.fact does not say which layout serves" in proc.stdout, proc.stdout
    assert "GPU topology facts" not in proc.stdout
    named = run_playbook(tmp_path, os.path.join(ROOT, "playbooks", "restart.yml"), *base,
                         "-e", "vllm_server_active_layout=degraded", check=True)
    assert "does not say which layout serves" not in named.stdout, named.stdout
    assert "TASK [GPU topology facts" in named.stdout or "gpu_preflight" in named.stdout, named.stdout
