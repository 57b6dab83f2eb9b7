# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Version of the stand-in (vLLM keeps its version in vllm/version.py too)."""

# The local label "+gpusim" marks the stand-in everywhere it reports a version
# (`vllm --version`, GET /version, pip metadata).
__version__ = "0.6.3.post1+gpusim"
# The vLLM release it stands in for.
STANDS_IN_FOR = "0.6.3.post1"
