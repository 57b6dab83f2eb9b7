# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpu-fleet simulator stand-in for vLLM 0.6.3.post1 -- TEST ONLY, not the real vLLM.

It serves OpenAI-shaped answers without any model or GPU so that deployment tests can run the
real install and service path on simulated GPU hosts. See README.md.
"""

from vllm.version import __version__

__all__ = ["__version__"]
