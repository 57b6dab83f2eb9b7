# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_owned_files: the comparison behind the one-call re-run check (expected values by hand)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _owned_files as owned

ENV = owned.Expected("/etc/vllm/n0-0.env", "file", "a" * 40, "root", "vllm", 0o640)


@pytest.mark.parametrize("value, mode", [("0640", 0o640), ("640", 0o640), (0o755, 0o755), ("", None), (None, None)])
def test_parse_mode(value, mode):
    assert owned.parse_mode(value) == mode


@pytest.mark.parametrize("value", ["0648", "u=rw", True])
def test_parse_mode_refuses(value):
    with pytest.raises(owned.OwnedFileError):
        owned.parse_mode(value)


def test_same_file_has_no_difference():
    assert owned.differences(ENV, owned.Found("file", "root", "vllm", 0o640, "a" * 40)) == []


def test_every_difference_is_named():
    found = owned.Found("file", "vllm", "root", 0o644, "b" * 40)
    assert owned.differences(ENV, found) == ["content differs", "owner vllm, must be root", "group root, must be vllm",
                                             "mode 0644, must be 0640"]


def test_unset_fields_are_not_compared():
    log = owned.Expected("/var/log/vllm/n0-0.log")
    assert owned.differences(log, owned.Found("file", "nobody", "nogroup", 0o600)) == []
    assert owned.differences(log, None) == ["missing"]


def test_compare_keeps_the_order_given():
    key = owned.Expected("/etc/vllm/api-key.env", "absent")
    found = {"/etc/vllm/api-key.env": owned.Found("file", "root", "vllm", 0o640)}
    assert list(owned.compare([key, ENV], found)) == ["/etc/vllm/api-key.env", "/etc/vllm/n0-0.env"]
    assert owned.compare([key], {}) == {}


def test_entry_without_path_or_with_an_unknown_state_is_refused():
    with pytest.raises(owned.OwnedFileError, match="no absolute path"):
        owned.expected_from_dict({"state": "file"})
    with pytest.raises(owned.OwnedFileError, match="no absolute path"):
        owned.expected_from_dict({"path": "etc/vllm"})
    with pytest.raises(owned.OwnedFileError, match="/x: state 'link' is none of file, directory, absent"):
        owned.expected_from_dict({"path": "/x", "state": "link"})
