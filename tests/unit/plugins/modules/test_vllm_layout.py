# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Module-level tests of vllm_layout: run the module file as Ansible would, in a subprocess,
with an args file ({"ANSIBLE_MODULE_ARGS": {...}}), and read its JSON answer."""

from __future__ import absolute_import, division, print_function

import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
MODULE = os.path.join(ROOT, "plugins", "modules", "vllm_layout.py")
MODELS = os.path.join(ROOT, "tests", "fixtures", "models")


def collections_root():
    """Directory holding ``ansible_collections``: the real one when the repo sits at
    .../ansible_collections/gpu_fleet/vllm_serving (ansible-test), else the .build/ac symlink farm."""
    parts = os.path.realpath(ROOT).split(os.sep)
    if len(parts) > 3 and parts[-3] == "ansible_collections":
        return os.sep.join(parts[:-3]) or os.sep
    return os.path.join(ROOT, ".build", "ac")


AC = collections_root()


def topology(available=True, reason=None):
    """a100x6_2numa: NV12 pairs 0-1, 2-3, 4-5; GPUs 0-2 NUMA 0 (CPUs 0-31), 3-5 NUMA 1 (CPUs 32-63)."""
    numa = [0, 0, 0, 1, 1, 1]

    def code(a, b):
        if a == b:
            return "X"
        if (min(a, b), max(a, b)) in ((0, 1), (2, 3), (4, 5)):
            return "NV12"
        return "NODE" if numa[a] == numa[b] else "SYS"
    if not available:
        return {"available": False, "reason": reason, "gpu_count": 0, "gpus": [], "links": [], "link_class": [],
                "nvlink_islands": [], "numa_nodes": [], "nics": [], "warnings": []}
    return {
        "available": True, "reason": None, "driver_version": "535.104.05", "cuda_driver_version": "12.2",
        "gpu_count": 6,
        "gpus": [{"index": i, "name": "NVIDIA A100 80GB PCIe", "uuid": "GPU-%d" % i, "pci_bus_id": "00000000:%02X:00.0" % i,
                  "memory_total_mib": 81920, "numa_node": numa[i],
                  "cpu_affinity": list(range(0, 32)) if numa[i] == 0 else list(range(32, 64)),
                  "healthy": True, "reason": None, "mig_mode": "Disabled", "nvlinks": []} for i in range(6)],
        "links": [[code(a, b) for b in range(6)] for a in range(6)],
        "link_class": [[{"X": "self", "NV12": "nvlink", "NODE": "node", "SYS": "sys"}[code(a, b)] for b in range(6)]
                       for a in range(6)],
        "nvlink_islands": [[0, 1], [2, 3], [4, 5]],
        "numa_nodes": [{"id": 0, "cpus": list(range(0, 32)), "gpus": [0, 1, 2]},
                       {"id": 1, "cpus": list(range(32, 64)), "gpus": [3, 4, 5]}],
        "nics": [], "warnings": [],
    }


def run_module(tmp_path, check_mode=False, **args):
    args.setdefault("topology", topology())
    args.setdefault("model_name", "Qwen/Qwen2.5-7B-Instruct")
    args.setdefault("host", "gpu-sim-a100x6")
    module_args = dict(args)
    module_args["_ansible_check_mode"] = check_mode
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": module_args}))
    env = dict(os.environ)
    env["PYTHONPATH"] = AC + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, MODULE, str(path)], cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    return proc.returncode, result


def model_config(name):
    base = os.path.join(ROOT, "tests", "fixtures", "real", "hf_configs") if name.startswith("Qwen3") else MODELS
    with open(os.path.join(base, name, "config.json")) as handle:
        return json.load(handle)


def test_auto_reads_config_on_host(tmp_path):
    rc, res = run_module(tmp_path, model_path=os.path.join(MODELS, "Qwen2.5-7B-Instruct"))
    assert rc == 0, res
    assert res["changed"] is False
    plan = res["ansible_facts"]["vllm_layout"]
    assert plan["host"] == "gpu-sim-a100x6"
    assert plan["model"]["config_source"] == "host"
    assert plan["model"]["path"] == os.path.join(MODELS, "Qwen2.5-7B-Instruct")
    assert plan["model"]["num_attention_heads"] == 28 and plan["model"]["num_key_value_heads"] == 4
    assert [i["name"] for i in plan["instances"]] == ["n0-0", "n0-1", "n0-2", "n1-0", "n1-1", "n1-2"]
    assert [i["port"] for i in plan["instances"]] == [8001, 8002, 8003, 8004, 8005, 8006]


def test_controller_config_used_when_host_file_absent(tmp_path):
    rc, res = run_module(tmp_path, model_path=str(tmp_path / "no-such-model"),
                         model_config=model_config("Qwen2.5-7B-Instruct"))
    assert rc == 0, res
    assert res["ansible_facts"]["vllm_layout"]["model"]["config_source"] == "controller"


def test_host_file_wins_and_a_difference_is_warned(tmp_path):
    other = model_config("Qwen2.5-14B-Instruct")
    rc, res = run_module(tmp_path, model_path=os.path.join(MODELS, "Qwen2.5-7B-Instruct"), model_config=other)
    assert rc == 0, res
    assert res["ansible_facts"]["vllm_layout"]["model"]["hidden_size"] == 3584
    # ansible-core 2.19 returns structured warnings (dicts), older releases plain strings
    assert "differs from the controller's model_config in num_attention_heads" in json.dumps(res.get("warnings", []))


def test_fails_when_no_config_source(tmp_path):
    rc, res = run_module(tmp_path, model_path=str(tmp_path / "missing"))
    assert rc == 1 and res["failed"] is True
    assert "no config.json for Qwen/Qwen2.5-7B-Instruct" in res["msg"]
    assert str(tmp_path / "missing" / "config.json") + " does not exist on host gpu-sim-a100x6" in res["msg"]


def test_fails_on_invalid_json(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text('{"hidden_size": 3584,')
    rc, res = run_module(tmp_path, model_path=str(model))
    assert rc == 1
    assert "is not valid JSON" in res["msg"] and str(model / "config.json") in res["msg"]


def test_fails_when_config_lacks_keys(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    cfg = model_config("Qwen2.5-7B-Instruct")
    del cfg["num_attention_heads"]
    (model / "config.json").write_text(json.dumps(cfg))
    rc, res = run_module(tmp_path, model_path=str(model))
    assert rc == 1
    assert "config.json lacks num_attention_heads" in res["msg"] and "gpu-sim-a100x6" in res["msg"]


def test_fails_when_topology_unavailable(tmp_path):
    rc, res = run_module(tmp_path, topology=topology(False, "No devices were found"),
                         model_config=model_config("Qwen2.5-7B-Instruct"))
    assert rc == 1
    assert res["msg"].startswith("host gpu-sim-a100x6: GPU topology is not available (No devices were found)")


def test_explicit_tp3_refused(tmp_path):
    rc, res = run_module(tmp_path, model_config=model_config("Qwen2.5-7B-Instruct"),
                         layout=[{"gpus": [0, 1, 2], "tensor_parallel_size": 3, "pipeline_parallel_size": 1}])
    assert rc == 1
    assert "host gpu-sim-a100x6" in res["msg"]
    assert "Total number of attention heads (28) must be divisible by tensor parallel size (3)." in res["msg"]
    assert "1, 2, 4, 28" in res["msg"]


def test_explicit_layout_accepted_with_port(tmp_path):
    rc, res = run_module(tmp_path, model_config=model_config("Qwen2.5-7B-Instruct"),
                         layout=[{"gpus": [4, 5], "tensor_parallel_size": 2, "port": 8010}, {"gpus": [0, 1]}])
    assert rc == 0, res
    insts = res["ansible_facts"]["vllm_layout"]["instances"]
    assert [(i["name"], i["gpus"], i["port"], i["worst_link"]) for i in insts] == [
        ("n0-0", [0, 1], 8001, "NV12"), ("n1-0", [4, 5], 8010, "NV12")]


def test_layout_given_as_json_string(tmp_path):
    rc, res = run_module(tmp_path, model_config=model_config("Qwen2.5-7B-Instruct"), layout='[{"gpus": [2]}]')
    assert rc == 0, res
    assert res["ansible_facts"]["vllm_layout"]["instances"][0]["gpus"] == [2]


def test_check_mode_gives_the_same_plan(tmp_path):
    kwargs = dict(model_config=model_config("Qwen2.5-72B-Instruct"))
    rc1, normal = run_module(tmp_path, **kwargs)
    rc2, checked = run_module(tmp_path, check_mode=True, **kwargs)
    assert rc1 == rc2 == 0
    assert checked["changed"] is False
    assert checked["ansible_facts"] == normal["ansible_facts"]


def test_options_reach_the_planner(tmp_path):
    rc, res = run_module(tmp_path, model_config=model_config("Qwen2.5-7B-Instruct"), base_port=9001,
                         endpoint_port=9000, max_model_len=4096, gpu_memory_utilization=0.5)
    assert rc == 0, res
    plan = res["ansible_facts"]["vllm_layout"]
    assert plan["instances"][0]["port"] == 9001 and plan["endpoint_port"] == 9000
    assert plan["model"]["max_model_len"] == 4096
    assert "at 0.50" in plan["explanation"]


def test_degraded_layout_auto_on_at_most_four_gpus(tmp_path):
    rc, res = run_module(tmp_path, model_config=model_config("Qwen2.5-7B-Instruct"),
                         layout=[{"gpus": [0, 1]}, {"gpus": [4, 5]}], degraded_layout="auto")
    assert rc == 0, res
    plan = res["ansible_facts"]["vllm_layout"]
    assert [i["gpus"] for i in plan["instances"]] == [[0, 1], [4, 5]]
    degraded = plan["degraded"]
    assert [(i["name"], i["gpus"], i["port"], i["worst_link"]) for i in degraded["instances"]] == [
        ("n0-0", [0], 8101, None), ("n0-1", [1], 8102, None), ("n0-2", [2], 8103, None), ("n1-0", [3], 8104, None)]
    assert degraded["gpus_unused"] == [4, 5]


def test_no_degraded_layout_unless_asked(tmp_path):
    rc, res = run_module(tmp_path, model_config=model_config("Qwen2.5-7B-Instruct"))
    assert rc == 0, res
    assert res["ansible_facts"]["vllm_layout"]["degraded"] is None


def test_bad_degraded_layout_fails_and_says_which(tmp_path):
    rc, res = run_module(tmp_path, model_config=model_config("Qwen2.5-7B-Instruct"),
                         degraded_layout=[{"gpus": [0, 1, 2], "tensor_parallel_size": 3}])
    assert rc == 1
    assert res["msg"].startswith("degraded layout: host gpu-sim-a100x6: layout rejected")
    assert "tensor_parallel_size 3 is invalid" in res["msg"]


# --- the release (pip_spec) --------------------------------------------------------------------------

def test_release_is_planned_with_the_pinned_nccl(tmp_path):
    rc, res = run_module(tmp_path, model_config=model_config("Qwen2.5-7B-Instruct"), pip_spec="vllm==0.6.3.post1",
                         pinned_nccl_version="2.14.3", layout=[{"gpus": [0, 1]}])
    assert rc == 0, res
    release = res["ansible_facts"]["vllm_layout"]["release"]
    assert (release["version"], release["torch"], release["status"]) == ("0.6.3.post1", "2.4.0", "supported")
    assert release["nccl"] == {"choice": "system", "path": None, "version": "2.14.3", "largest_group": 2,
                               "why": "the pinned NCCL 2.14.3 reaches vLLM 0.6.3.post1 through VLLM_NCCL_SO_PATH "
                                      "(its NCCL wrapper binds only the classic symbols (no floor))"}


def test_without_pip_spec_there_is_no_release(tmp_path):
    rc, res = run_module(tmp_path, model_config=model_config("Qwen2.5-7B-Instruct"))
    assert rc == 0 and res["ansible_facts"]["vllm_layout"]["release"] is None


def test_qwen3_on_the_default_release_is_refused(tmp_path):
    rc, res = run_module(tmp_path, model_name="Qwen/Qwen3-8B", model_config=model_config("Qwen3-8B"),
                         pip_spec="vllm==0.6.3.post1")
    assert rc != 0 and res["failed"]
    assert res["msg"].startswith("host gpu-sim-a100x6: the model's architecture Qwen3ForCausalLM (config.json) is not "
                                 "served by vLLM 0.6.3.post1")


def test_range_spec_is_refused(tmp_path):
    rc, res = run_module(tmp_path, model_config=model_config("Qwen2.5-7B-Instruct"), pip_spec="vllm>=0.6")
    assert rc != 0
    assert res["msg"].startswith('host gpu-sim-a100x6: vllm_server_pip_spec is "vllm>=0.6" does not pin one exact release')


def test_explicit_library_below_the_floor_is_read_and_refused(tmp_path):
    # a file named as the apt package names it (libnccl.so.2 -> libnccl.so.2.14.3): its version from the name
    lib = tmp_path / "libnccl.so.2.14.3"
    lib.write_bytes(b"\x7fELF stand-in NCCL version 2.14.3+cuda11.7\x00")
    link = tmp_path / "libnccl.so.2"
    link.symlink_to(lib.name)
    rc, res = run_module(tmp_path, model_name="Qwen/Qwen3-8B", model_config=model_config("Qwen3-8B"),
                         pip_spec="vllm==0.18.0", nccl_so_path=str(link), layout=[{"gpus": [0, 1]}])
    assert rc != 0
    assert "vllm_server_nccl_so_path is %s, which is NCCL 2.14.3, but vLLM 0.18.0's NCCL wrapper needs NCCL >= " \
           "2.27: with a tensor x pipeline parallel group of 2" % link in res["msg"]


def test_driver_too_old_for_cuda_13_wheels_is_refused(tmp_path):
    rc, res = run_module(tmp_path, model_name="Qwen/Qwen3-8B", model_config=model_config("Qwen3-8B"),
                         pip_spec="vllm==0.32.0")
    assert rc != 0
    assert res["msg"].startswith("host gpu-sim-a100x6: driver 535.104.05 is older than 580.65.06, which the CUDA "
                                 "13.0.96 runtime of vLLM 0.32.0's wheels needs")


def test_explicit_library_version_from_its_banner(tmp_path):
    lib = tmp_path / "libnccl.so.2"
    lib.write_bytes(b"\x7fELF" + b"\x00" * 64 + b"NCCL version 2.27.5+cuda12.9\x00")
    rc, res = run_module(tmp_path, model_name="Qwen/Qwen3-8B", model_config=model_config("Qwen3-8B"),
                         pip_spec="vllm==0.18.0", nccl_so_path=str(lib), layout=[{"gpus": [0, 1]}])
    assert rc == 0, res
    assert res["ansible_facts"]["vllm_layout"]["release"]["nccl"]["version"] == "2.27.5"


def test_controller_index_sizes_the_weights(tmp_path):
    rc, res = run_module(tmp_path, model_name="Qwen/Qwen3-8B", model_config=model_config("Qwen3-8B"),
                         model_index={"metadata": {"total_size": 16381470720}, "weight_map": {}})
    assert rc == 0, res
    model = res["ansible_facts"]["vllm_layout"]["model"]
    assert (model["weights_source"], model["weights_gib"]) == ("controller index", 15.26)


def test_host_index_that_disagrees_wins_with_a_warning(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(model_config("Qwen3-8B")))
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 17179869184}}))
    rc, res = run_module(tmp_path, model_name="Qwen/Qwen3-8B", model_path=str(tmp_path),
                         model_index={"metadata": {"total_size": 16381470720}})
    assert rc == 0, res
    assert res["ansible_facts"]["vllm_layout"]["model"]["weights_source"] == "host index"
    assert "gives total_size 17179869184, the controller's model_index 16381470720" in json.dumps(res["warnings"])


def test_index_without_total_size_is_refused(tmp_path):
    rc, res = run_module(tmp_path, model_name="Qwen/Qwen3-8B", model_config=model_config("Qwen3-8B"),
                         model_index={"weight_map": {}})
    assert rc != 0 and "model_index has no positive integer metadata.total_size" in res["msg"]


def test_fp8_tp_rule_follows_the_release(tmp_path):
    cfg = model_config("Qwen3-30B-A3B-FP8")
    rc, res = run_module(tmp_path, model_name="Qwen/Qwen3-30B-A3B-FP8", model_config=cfg, pip_spec="vllm==0.18.0")
    assert rc == 0, res
    assert res["ansible_facts"]["vllm_layout"]["valid_tensor_parallel_sizes"] == [1, 2]


# --- review findings (issue 17): what an explicit NCCL path, a config or a spec can be --------------

def _tp2_on_0_18(tmp_path, path):
    return run_module(tmp_path, model_name="Qwen/Qwen3-8B", model_config=model_config("Qwen3-8B"),
                      pip_spec="vllm==0.18.0", nccl_so_path=str(path), layout=[{"gpus": [0, 1]}])


def test_fifo_as_nccl_library_is_refused_not_opened(tmp_path):
    fifo = tmp_path / "libnccl.so.2"
    os.mkfifo(str(fifo))
    rc, res = _tp2_on_0_18(tmp_path, fifo)
    assert rc != 0 and "which is not a regular file, so its NCCL version is not known" in res["msg"]


def test_directory_named_like_a_library_is_refused(tmp_path):
    lib = tmp_path / "libnccl.so.2.29.7"
    lib.mkdir()
    rc, res = _tp2_on_0_18(tmp_path, lib)
    assert rc != 0 and "is not a regular file" in res["msg"]


def test_missing_library_is_not_taken_for_the_pin(tmp_path):
    rc, res = _tp2_on_0_18(tmp_path, tmp_path / "missing" / "libnccl.so.2")
    assert rc != 0 and "does not exist on the host" in res["msg"]


def test_banner_wins_over_the_file_name(tmp_path):
    # a file named 2.30.2 whose own version string says 2.21.5: NCCL reports the latter
    lib = tmp_path / "libnccl.so.2.30.2"
    lib.write_bytes(b"\x7fELF" + b"\x00" * 32 + b"NCCL version 2.21.5+cuda12.4\x00")
    rc, res = _tp2_on_0_18(tmp_path, lib)
    assert rc != 0 and "which is NCCL 2.21.5, but vLLM 0.18.0's NCCL wrapper needs NCCL >= 2.27" in res["msg"]


def test_architectures_not_a_list_is_refused(tmp_path):
    cfg = dict(model_config("Qwen2.5-7B-Instruct"), architectures="Qwen2ForCausalLM")
    rc, res = run_module(tmp_path, model_config=cfg, pip_spec="vllm==0.6.3.post1")
    assert rc != 0 and "config.json architectures is 'Qwen2ForCausalLM': it must be a list of model class names" in res["msg"]


def test_empty_pip_spec_is_refused(tmp_path):
    rc, res = run_module(tmp_path, model_config=model_config("Qwen2.5-7B-Instruct"), pip_spec="")
    assert rc != 0 and "does not pin one exact release" in res["msg"]


def test_moe_family_the_formula_does_not_model_needs_the_index(tmp_path):
    # a Mixtral-8x7B-shaped config (experts under num_local_experts); the index total below is this test's input
    mixtral = {"architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": 4096,
               "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
               "vocab_size": 32000, "num_local_experts": 8, "num_experts_per_tok": 2, "torch_dtype": "bfloat16",
               "max_position_embeddings": 32768, "tie_word_embeddings": False}
    rc, res = run_module(tmp_path, model_name="mistralai/Mixtral-8x7B", model_config=mixtral, pip_spec="vllm==0.6.3.post1")
    assert rc != 0 and "'num_local_experts', a mixture-of-experts layout the parameter formula does not model" in res["msg"]
    rc, res = run_module(tmp_path, model_name="mistralai/Mixtral-8x7B", model_config=mixtral, pip_spec="vllm==0.6.3.post1",
                         model_index={"metadata": {"total_size": 93405585408}}, layout=[{"gpus": [0, 1]}])
    assert rc == 0, res
    assert res["ansible_facts"]["vllm_layout"]["model"]["weights_source"] == "controller index"


def test_index_far_from_the_formula_is_warned(tmp_path):
    rc, res = run_module(tmp_path, model_name="Qwen/Qwen3-8B", model_config=model_config("Qwen3-8B"),
                         model_index={"metadata": {"total_size": 100}})
    assert rc == 0 and "check that the index is this model's" in json.dumps(res["warnings"])
