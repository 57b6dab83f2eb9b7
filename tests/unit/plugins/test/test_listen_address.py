# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The listen_address test plugin: what nginx's listen directive takes before the port."""

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.test import listen_address as plugin

listen_address = plugin.TestModule().tests()["listen_address"]

GOOD = ["127.0.0.1", "0.0.0.0", "10.0.0.5", "::", "::1", "[::1]", "[::]", "fd00::5", "localhost",
        "gpu-01.example.org", "gpu01"]
# nginx refuses these in "listen" (or reads them as something else): a port, unbalanced brackets,
# an IPv4 address in brackets, a fifth octet, separators and line breaks
BAD = ["10.0.0.256", "1.2.3", "[::1", "10.0.0.5]", "[10.0.0.5]", "10.0.0.5:8000", "127.0.0.1\n", "a b", "x;y",
       "", "-gpu", "gpu-", ":::::", "10.0.0.5 default_server", "a..b", "x" * 254]


@pytest.mark.parametrize("value", GOOD, ids=repr)
def test_addresses_and_host_names(value):
    assert listen_address(value) is True


@pytest.mark.parametrize("value", BAD, ids=repr)
def test_refused(value):
    assert listen_address(value) is False
