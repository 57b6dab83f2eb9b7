# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Logging set up the way vLLM 0.6.3 does it (stand-in, TEST ONLY).

vLLM 0.6.x (``vllm/logger.py``) configures its loggers once, when this module is imported (in the
API server and in every worker process), from two environment variables:

* ``VLLM_CONFIGURE_LOGGING`` (default ``1``): apply ``DEFAULT_LOGGING_CONFIG`` - the ``vllm``
  logger (every ``vllm.*`` logger propagates to it) with one stream handler on stdout, level INFO;
* ``VLLM_LOGGING_CONFIG_PATH``: a JSON file handed to ``logging.config.dictConfig`` *instead of*
  the default (not merged); a missing file is a ``RuntimeError``, a JSON value that is not an
  object a ``ValueError``, and a path given while ``VLLM_CONFIGURE_LOGGING=0`` a ``RuntimeError``
  - all raised at import, i.e. the server does not start.

Lines look like ``INFO 11-29 15:51:02 api_server.py:528] message``. uvicorn's lines
(``INFO:     message``) do not go through this configuration: uvicorn configures its own loggers
and writes to stderr (``uvicorn_log`` below).
"""

import json
import logging
import os
import sys
from logging.config import dictConfig

VLLM_CONFIGURE_LOGGING = int(os.getenv("VLLM_CONFIGURE_LOGGING", "1"))
VLLM_LOGGING_CONFIG_PATH = os.getenv("VLLM_LOGGING_CONFIG_PATH")

_FORMAT = "%(levelname)s %(asctime)s %(filename)s:%(lineno)d] %(message)s"
_DATE_FORMAT = "%m-%d %H:%M:%S"

# vLLM's formatter class is vllm.logging.NewLineFormatter (it only repeats the prefix on
# continuation lines); the stand-in uses the plain formatter with the same format.
DEFAULT_LOGGING_CONFIG = {
    "formatters": {"vllm": {"datefmt": _DATE_FORMAT, "format": _FORMAT}},
    "handlers": {
        "vllm": {
            "class": "logging.StreamHandler",
            "formatter": "vllm",
            "level": "INFO",
            "stream": "ext://sys.stdout",
        },
    },
    "loggers": {"vllm": {"handlers": ["vllm"], "level": "DEBUG", "propagate": False}},
    "version": 1,
}


def _configure_vllm_root_logger():
    logging_config = None

    if not VLLM_CONFIGURE_LOGGING and VLLM_LOGGING_CONFIG_PATH:
        raise RuntimeError(
            "VLLM_CONFIGURE_LOGGING evaluated to false, but "
            "VLLM_LOGGING_CONFIG_PATH was given. VLLM_LOGGING_CONFIG_PATH "
            "implies VLLM_CONFIGURE_LOGGING. Please enable "
            "VLLM_CONFIGURE_LOGGING or unset VLLM_LOGGING_CONFIG_PATH.")

    if VLLM_CONFIGURE_LOGGING:
        logging_config = DEFAULT_LOGGING_CONFIG

    if VLLM_LOGGING_CONFIG_PATH:
        if not os.path.exists(VLLM_LOGGING_CONFIG_PATH):
            # vLLM 0.6.3 passes the path as a second argument (the message is not formatted)
            raise RuntimeError(  # pylint: disable=raising-format-tuple
                "Could not load logging config. File does not exist: %s",
                VLLM_LOGGING_CONFIG_PATH)
        with open(VLLM_LOGGING_CONFIG_PATH, encoding="utf-8") as file:
            custom_config = json.loads(file.read())
        if not isinstance(custom_config, dict):
            raise ValueError("Invalid logging config. Expected Dict, got %s.",  # pylint: disable=raising-format-tuple
                             type(custom_config).__name__)
        logging_config = custom_config

    if logging_config:
        dictConfig(logging_config)


# Configured when the module is imported, like vLLM.
_configure_vllm_root_logger()


def init_logger(name):
    """Return a logger below the "vllm" logger (same name scheme as vLLM)."""
    return logging.getLogger(name)


def uvicorn_log(message, level="INFO", stream=None):
    """Write one uvicorn-style line: level + colon padded to 10 columns, then the message."""
    out = stream if stream is not None else sys.stderr
    out.write("%s %s\n" % ((level + ":").ljust(9), message))
    out.flush()
