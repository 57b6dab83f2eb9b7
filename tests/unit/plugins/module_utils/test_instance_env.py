# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The collection's one reader of the instance environment file (module_utils/_instance_env) on
hand-written texts. On the files the real template renders, and against the monitoring
collector's copy: tests/unit/roles/test_instance_env_template.py."""

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _instance_env as ie


def test_parse_env_text_systemd_forms():
    text = ("# {{ managed }}\nCUDA_VISIBLE_DEVICES=0,1\n; comment\n"
            "VLLM_NCCL_SO_PATH=\"/usr/lib/x86_64-linux-gnu/libnccl.so.2\"\nexport FOO='bar baz'\n"
            "not a pair\n1BAD=x\nVLLM_EXTRA_ARGS=\n")
    env = ie.parse_env_text(text)
    assert env == {"CUDA_VISIBLE_DEVICES": "0,1", "VLLM_NCCL_SO_PATH": "/usr/lib/x86_64-linux-gnu/libnccl.so.2",
                   "FOO": "bar baz", "VLLM_EXTRA_ARGS": ""}


ENV = ("# comment\nCUDA_VISIBLE_DEVICES=0,1\nVLLM_PORT=8001\nVLLM_TENSOR_PARALLEL_SIZE=2\n"
       "VLLM_PIPELINE_PARALLEL_SIZE=1\n")


def test_instances_from_env():
    assert ie.instances_from_env({"n0-0": ENV}) == [
        {"name": "n0-0", "gpus": [0, 1], "tensor_parallel_size": 2, "pipeline_parallel_size": 1, "port": 8001}]
    assert [i["name"] for i in ie.instances_from_env({"n1-0": ENV, "n0-0": ENV})] == ["n0-0", "n1-0"]
    assert ie.instance_record("x", "VLLM_PORT=\n") == {
        "name": "x", "gpus": [], "tensor_parallel_size": 1, "pipeline_parallel_size": 1, "port": None}
