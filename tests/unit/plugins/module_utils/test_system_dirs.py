# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one list of system directories (_system_dirs.py) and the system_dir test plugin."""

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._system_dirs import normalize, system_dir_reason
from ansible_collections.gpu_fleet.vllm_serving.plugins.test.system_dir import TestModule

REFUSED = {
    "/": "/ is a system directory",
    "//": "/ is a system directory",
    "/var/lib": "/var/lib is a system directory",
    "/var/lib/": "/var/lib is a system directory",
    "/var//lib/.": "/var/lib is a system directory",
    "/var/lib/vllm/..": "/var/lib is a system directory",
    "/etc": "/etc is a system directory",
    "/usr": "/usr is a system directory",
    "/opt": "/opt is a system directory",
    "/home": "/home is a system directory",
    "/root": "/root is a system directory",
    "/var/log": "/var/log is a system directory",
    "/usr/lib/python3": "/usr/lib/python3 lies under /usr/lib, which belongs to the OS",
    "/proc/1": "/proc/1 lies under /proc, which belongs to the OS",
    "/var/lib/containers/storage": "/var/lib/containers/storage lies under /var/lib/containers, which belongs to the OS",
    "var/lib/vllm": "it is not an absolute path",
    "": "it is not an absolute path",
    "/var/lib/vllm\0": "it is not an absolute path",
}
ACCEPTED = ["/var/lib/vllm", "/var/lib/gpu-fleet/monitor", "/etc/vllm", "/opt/vllm", "/srv/models",
            "/var/log/vllm", "/var/cache/vllm", "/data/hf-cache", "/usr/local/vllm", "/run/vllm"]


@pytest.mark.parametrize("path", sorted(REFUSED))
def test_refused(path):
    assert system_dir_reason(path) == REFUSED[path]
    assert TestModule().tests()["system_dir"](path) is True


@pytest.mark.parametrize("path", ACCEPTED)
def test_accepted(path):
    assert system_dir_reason(path) is None
    assert TestModule().tests()["system_dir"](path) is False


def test_normalize_is_not_a_resolver():
    assert normalize("/a/b/../c//") == "/a/c"
    assert normalize(None) is None
    assert normalize(17) is None
