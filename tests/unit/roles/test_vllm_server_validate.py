# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""vllm_server refuses an endpoint beyond loopback without authentication, and a listen address
that is not one, in its plan (site.yml play 1, before anything changes).

The role's real validation tasks (roles/vllm_server/tasks/validate.yml) run through
ansible-playbook in check mode against localhost, once for all cases. What the endpoint then
serves, to whom, is tested over HTTP on the simulated host (molecule scenarios vllm_server and
compliance)."""

import pytest

from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import run_harness

OPEN = ("vllm_server_listen_address is '%s', which is not loopback, and vllm_server_api_key is empty: "
        "anyone who reaches port 8000 could use the model. Set vllm_server_api_key")
NOT_ADDRESS = "it must be one IPv4 address, IPv6 address (bare or in brackets) or host name"

CASES = {
    "default_loopback": ({"listen": "127.0.0.1"}, "accepted"),
    "loopback_other": ({"listen": "127.0.0.53"}, "accepted"),
    "loopback_v6": ({"listen": "::1"}, "accepted"),
    "localhost": ({"listen": "localhost"}, "accepted"),
    "all_with_key": ({"listen": "0.0.0.0", "key": "k-1"}, "accepted"),
    "all_open_on_purpose": ({"listen": "0.0.0.0", "open": True}, "accepted"),
    "all_without_key": ({"listen": "0.0.0.0"}, OPEN % "0.0.0.0"),
    "v6_all_without_key": ({"listen": "::"}, OPEN % "::"),
    "interface_without_key": ({"listen": "10.0.0.5"}, OPEN % "10.0.0.5"),
    "looks_like_loopback": ({"listen": "127.0.0.1.example.com"}, OPEN % "127.0.0.1.example.com"),
    "injection": ({"listen": "127.0.0.1:80; include /etc/passwd", "key": "k"}, NOT_ADDRESS),
    "newline": ({"listen": "127.0.0.1\nlisten 0.0.0.0", "key": "k"}, NOT_ADDRESS),
    "empty": ({"listen": ""}, NOT_ADDRESS),
}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    cases = [{"id": k, "vars": v[0]} for k, v in CASES.items()]
    return run_harness(tmp_path_factory.mktemp("validate"), "vllm_server_validate.yml", cases)


@pytest.mark.parametrize("case", sorted(CASES))
def test_endpoint_exposure(results, case):
    expected = CASES[case][1]
    got = results[case]
    if expected == "accepted":
        assert got == "accepted"
    else:
        assert got.startswith("host localhost: ") and expected in got, got
        assert got.endswith("Nothing was changed.")
