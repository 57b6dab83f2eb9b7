# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Log lines shaped like vLLM's and uvicorn's (stand-in, TEST ONLY).

vLLM 0.6.x: ``INFO 11-29 15:51:02 api_server.py:528] message`` on stdout.
uvicorn:    ``INFO:     message`` on stderr.
"""

import logging
import sys

_FORMAT = "%(levelname)s %(asctime)s %(filename)s:%(lineno)d] %(message)s"
_DATEFMT = "%m-%d %H:%M:%S"

_root = logging.getLogger("vllm")
if not _root.handlers:
    _handler = logging.StreamHandler(sys.stdout)
    _handler.setFormatter(logging.Formatter(_FORMAT, datefmt=_DATEFMT))
    _root.addHandler(_handler)
    _root.setLevel(logging.DEBUG)
    _root.propagate = False


def init_logger(name):
    """Return a logger below the "vllm" logger (same name scheme as vLLM)."""
    return logging.getLogger(name)


def uvicorn_log(message, level="INFO", stream=None):
    """Write one uvicorn-style line: level + colon padded to 10 columns, then the message."""
    out = stream if stream is not None else sys.stderr
    out.write("%s %s\n" % ((level + ":").ljust(9), message))
    out.flush()
