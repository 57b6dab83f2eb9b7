# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The listen_address test (documentation in listen_address.yml)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import re

from ansible.module_utils.common.text.converters import to_text

# RFC 1123 labels; the last one holds a letter, so 10.0.0.256 is no host name.
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST = re.compile(r"(?:%s\.)*(?=[A-Za-z0-9-]*[A-Za-z])%s\Z" % (_LABEL, _LABEL))


def listen_address(value):
    """True if ``value`` is an IPv4 address, an IPv6 address (bare or in brackets) or a host name,
    as nginx's ``listen`` directive takes it before the port."""
    text = to_text(value, errors="surrogate_or_strict")
    if not text or len(text) > 253:
        return False
    inner = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    try:
        address = ipaddress.ip_address(inner)
    except ValueError:
        return inner == text and bool(_HOST.match(text))
    return address.version == 6 or inner == text


class TestModule(object):
    def tests(self):
        return {"listen_address": listen_address}
