# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Stand-in for ansible-test's downloaded pip bootstrap script (get-pip.py).

Used only where that download fails (machines without access to its host): bootstraps pip from
the interpreter's own ensurepip, then installs what ansible-test asked for from the package index.
"""
import ensurepip
import os
import subprocess
import sys

args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
ensurepip.bootstrap(upgrade=True)
os.environ.pop("PIP_CONFIG_FILE", None)  # ensurepip sets it to /dev/null
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install"] + args))
