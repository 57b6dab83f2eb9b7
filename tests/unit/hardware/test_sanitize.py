# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""tests/hardware/sanitize.py on a planted capture (lines in the form of the real H200 captures,
values typed here), and the committed captures and the profiles made from them hold no real
identifier: every GPU PDI is a placeholder."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import importlib.util
import os
import re

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SPEC = importlib.util.spec_from_file_location("gpu_fleet_sanitize", os.path.join(ROOT, "tests", "hardware", "sanitize.py"))
sanitize = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(sanitize)

UUID_A = "GPU-1f2e3d4c-5b6a-7980-a1b2-c3d4e5f60718"
UUID_B = "GPU-aaaabbbb-cccc-dddd-eeee-ffff00001111"
PDI_A = "0xcba84425f55a0b0b"
PDI_B = "0x52B724BA0EC584FE"

Q_X = (u"<nvidia_smi_log>\n"
       u"\t<gpu id=\"00000000:00:06.0\">\n\t\t<serial>1654923012345</serial>\n"
       u"\t\t<uuid>%s</uuid>\n\t\t<pdi>%s</pdi>\n\t</gpu>\n"
       u"\t<gpu id=\"00000000:00:07.0\">\n\t\t<serial>N/A</serial>\n"
       u"\t\t<uuid>%s</uuid>\n\t\t<gpu_pdi>%s</gpu_pdi>\n\t</gpu>\n"
       u"</nvidia_smi_log>\n") % (UUID_A, PDI_A, UUID_B, PDI_B)
# the text form lists GPU B first (another file, other order): the placeholders follow q_x.out
Q = (u"GPU 00000000:00:07.0\n"
     u"    Serial Number                                      : N/A\n"
     u"    GPU UUID                                           : %s\n"
     u"    GPU PDI                                            : %s\n"
     u"GPU 00000000:00:06.0\n"
     u"    Serial Number                                      : 1654923012345\n"
     u"    GPU UUID                                           : %s\n"
     u"    GPU PDI                                            : %s  \n") % (UUID_B, PDI_B.lower(), UUID_A, PDI_A)


def test_pdi_uuid_and_serial_become_placeholders_in_the_gpus_order(tmp_path):
    (tmp_path / "q_x.out").write_bytes(Q_X.encode())
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "q.out").write_bytes(Q.encode())
    (tmp_path / "topo_m.out").write_bytes(b"\x1b[4mGPU0\tGPU1\x1b[0m\n")
    changed, uuids, pdis = sanitize.sanitize(str(tmp_path))
    assert sorted(changed) == ["q_x.out", os.path.join("sub", "q.out")]
    assert len(uuids) == 2 and len(pdis) == 2
    q_x = (tmp_path / "q_x.out").read_bytes().decode()
    assert "<pdi>0x0000000000000000</pdi>" in q_x and "<gpu_pdi>0x0000000000000001</gpu_pdi>" in q_x
    assert "<uuid>GPU-00000000-0000-0000-0000-000000000000</uuid>" in q_x
    assert "<serial>0000000000000</serial>" in q_x and "<serial>N/A</serial>" in q_x
    q = (tmp_path / "sub" / "q.out").read_bytes().decode()
    assert q == (u"GPU 00000000:00:07.0\n"
                 u"    Serial Number                                      : N/A\n"
                 u"    GPU UUID                                           : GPU-00000000-0000-0000-0000-000000000001\n"
                 u"    GPU PDI                                            : 0x0000000000000001\n"
                 u"GPU 00000000:00:06.0\n"
                 u"    Serial Number                                      : 0000000000000\n"
                 u"    GPU UUID                                           : GPU-00000000-0000-0000-0000-000000000000\n"
                 u"    GPU PDI                                            : 0x0000000000000000  \n")
    assert (tmp_path / "topo_m.out").read_bytes() == b"\x1b[4mGPU0\tGPU1\x1b[0m\n"
    # a second run finds nothing left to change
    assert sanitize.sanitize(str(tmp_path))[0] == []


PDI_LINE = re.compile(r"(?:GPU PDI\s*: |<(?:gpu_)?pdi>)(\S+?)(?:</|\s|$)")


def test_committed_captures_hold_no_real_pdi():
    # every capture of tests/fixtures/real and every simulator profile replaying one (meta.json
    # "generated": false); a100x6_2numa is generated, its PDIs made up by generate_a100x6.py
    dirs = glob.glob(os.path.join(ROOT, "tests", "fixtures", "real", "*"))
    for meta in glob.glob(os.path.join(ROOT, "tests", "simulator", "profiles", "*", "meta.json")):
        with open(meta) as handle:
            if '"generated": false' in handle.read():
                dirs.append(os.path.dirname(meta))
    seen = 0
    for directory in dirs:
        for path in glob.glob(os.path.join(directory, "**", "*"), recursive=True):
            if not os.path.isfile(path):
                continue
            with open(path, "rb") as handle:
                text = handle.read().decode("utf-8", "replace")
            for value in PDI_LINE.findall(text):
                seen += 1
                assert value == "N/A" or re.match(r"^0x0+[0-9]$", value), (path, value)
    assert seen >= 2 * (1 + 2 + 4) * 2   # q.out and q_x.out of h200_vm, h200x2, h200x4, capture and profile
