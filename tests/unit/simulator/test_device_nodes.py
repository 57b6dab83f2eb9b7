# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The simulator's fault device-nodes-missing (tests/simulator/bin/gpu-sim-fault): the stand-in
NVIDIA device nodes go, and clear puts back exactly those (type, numbers, mode). Run on a /dev
tree planted in tmp_path (mknod: needs root, as on the simulated hosts)."""

import os
import stat
import subprocess
import sys

import pytest

FAULT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "simulator", "bin", "gpu-sim-fault"))


def fault(tmp_path, *argv):
    env = dict(os.environ, GPU_SIM_PROFILE=str(tmp_path / "profile"), GPU_SIM_DEV=str(tmp_path / "dev"))
    return subprocess.run([sys.executable, FAULT] + list(argv), env=env, check=True)


def test_device_nodes_missing_and_cleared(tmp_path):
    dev = tmp_path / "dev"
    dev.mkdir()
    (tmp_path / "profile").mkdir()
    try:
        for name, minor in (("nvidia0", 0), ("nvidia1", 1), ("nvidiactl", 255)):
            os.mknod(str(dev / name), stat.S_IFCHR | 0o666, os.makedev(195, minor))
            os.chmod(str(dev / name), 0o666)
    except (OSError, AttributeError) as exc:
        pytest.skip("cannot create character devices here (mknod needs CAP_MKNOD): %s" % exc)
    (dev / "null").write_text(u"")
    fault(tmp_path, "device-nodes-missing")
    assert sorted(os.listdir(str(dev))) == ["null"]
    fault(tmp_path, "clear")
    assert sorted(os.listdir(str(dev))) == ["null", "nvidia0", "nvidia1", "nvidiactl"]
    for name, minor in (("nvidia0", 0), ("nvidia1", 1), ("nvidiactl", 255)):
        st = os.lstat(str(dev / name))
        assert stat.S_ISCHR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o666
        assert (os.major(st.st_rdev), os.minor(st.st_rdev)) == (195, minor)
    assert not (tmp_path / "profile" / "faults").exists()
