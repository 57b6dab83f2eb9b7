# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Log file handler of a vLLM instance (gpu_fleet.vllm_serving).

/etc/vllm/logging.json (VLLM_LOGGING_CONFIG_PATH) is one file for every instance of the host;
logging.config.dictConfig calls instance_file_handler() (the handler's "()" key) in each vLLM
process, and the instance's environment file names its log file in GPU_FLEET_VLLM_LOG_FILE.
WatchedFileHandler appends (copytruncate rotation keeps working) and reopens the file when
logrotate has renamed it (rotation by rename keeps working too). Standard library only.
"""
import logging.handlers
import os

ENV = "GPU_FLEET_VLLM_LOG_FILE"


def instance_file_handler(env=ENV):
    """Return a WatchedFileHandler on the file named by the environment variable ``env``."""
    path = os.environ.get(env, "")
    if not path:
        raise ValueError("%s is not set: the instance's environment file must name its log file "
                         "(re-run the vllm_server role)" % env)
    return logging.handlers.WatchedFileHandler(path, encoding="utf-8")
