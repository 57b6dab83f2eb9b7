# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A vLLM server's ``/metrics`` (Prometheus text format 0.0.4), read: the samples, and how many
requests the server holds (running + waiting), which is what a drain waits for.

Every vLLM release the collection knows exports ``vllm:num_requests_running`` and
``vllm:num_requests_waiting`` (V0: one sample per model; V1, 0.32.0: one per ``engine`` and
``model_name``); the sum over all samples of both is the requests in flight. A server started
with ``--disable-log-stats`` exports neither: :func:`in_flight` answers None (unknown).

Private to the collection (``vllm_drain`` is its caller). Pure code: no Ansible imports, no I/O.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

IN_FLIGHT_GAUGES = ("vllm:num_requests_running", "vllm:num_requests_waiting")
_SAMPLE = re.compile(r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)(?:\s+-?\d+)?\s*$")
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_samples(text):
    """[(name, {label: value}, float)] of every sample line; comments, blank lines and lines that
    are not samples (or whose value is not a number) are skipped."""
    samples = []
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if not match:
            continue
        try:
            value = float(match.group("value"))
        except ValueError:
            continue
        labels = dict((k, v.replace('\\"', '"').replace("\\\\", "\\"))
                      for k, v in _LABEL.findall(match.group("labels") or ""))
        samples.append((match.group("name"), labels, value))
    return samples


def in_flight(text):
    """Requests the server holds (running + waiting, all engines and models), or None when its
    /metrics has neither gauge."""
    values = [value for name, _labels, value in parse_samples(text) if name in IN_FLIGHT_GAUGES]
    if not values:
        return None
    return int(round(sum(values)))
