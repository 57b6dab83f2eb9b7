# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""vllm_server's logging configuration, loaded the way vLLM 0.6.3 loads VLLM_LOGGING_CONFIG_PATH.

The role's template logging.json.j2 is rendered with Jinja2 (the filter to_nice_json as Ansible
defines it: json.dumps with indent and sorted keys) and handed to logging.config.dictConfig, with
the role's file handler module on sys.path, as a vLLM process of an instance would. The expected
destinations (stderr and the file named by GPU_FLEET_VLLM_LOG_FILE) are the role's contract.
"""
import importlib
import io
import json
import logging
import logging.config
import logging.handlers
import os
import sys

import jinja2
import pytest

ROLE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "roles", "vllm_server"))


def _render(level="INFO"):
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(ROLE, "templates")))
    env.filters["to_nice_json"] = lambda data, indent=4: json.dumps(data, indent=indent, sort_keys=True)
    return json.loads(env.get_template("logging.json.j2").render(vllm_server_log_level=level))


@pytest.fixture
def handler_module(monkeypatch):
    monkeypatch.syspath_prepend(os.path.join(ROLE, "files"))
    module = importlib.import_module("gpu_fleet_vllm_logging")
    yield module
    for name in ("vllm", "vllm.entrypoints.openai.api_server", "uvicorn", "uvicorn.access"):
        logger = logging.getLogger(name)
        for handler in list(logger.handlers):
            handler.close()
            logger.removeHandler(handler)


def test_vllm_lines_go_to_stderr_and_the_instance_file_across_a_rename(handler_module, monkeypatch, tmp_path):
    log = tmp_path / "degraded-n0-0.log"
    monkeypatch.setenv("GPU_FLEET_VLLM_LOG_FILE", str(log))
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    logging.config.dictConfig(_render())
    logger = logging.getLogger("vllm.entrypoints.openai.api_server")  # vLLM's name for it
    logger.info("first line")
    logger.debug("not at INFO")
    assert "first line" in log.read_text() and "first line" in stderr.getvalue()
    assert "not at INFO" not in log.read_text() + stderr.getvalue()
    os.rename(str(log), str(log) + ".1")  # logrotate without copytruncate
    logger.info("after rename")
    assert "after rename" in log.read_text()
    assert "after rename" not in (tmp_path / "degraded-n0-0.log.1").read_text()
    with open(str(log), "r+") as handle:  # logrotate copytruncate
        handle.truncate(0)
    logger.info("after truncate")
    assert log.read_text().startswith("INFO ") and "after truncate" in log.read_text()
    # vLLM's line shape: "INFO 11-29 15:51:02 file.py:123] message"
    assert log.read_text().split("] ", 1)[1].strip() == "after truncate"


def test_log_level_applies_to_both_handlers(handler_module, monkeypatch, tmp_path):
    log = tmp_path / "n1-0.log"
    monkeypatch.setenv("GPU_FLEET_VLLM_LOG_FILE", str(log))
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    logging.config.dictConfig(_render("WARNING"))
    logging.getLogger("vllm.engine").info("info line")
    logging.getLogger("vllm.engine").warning("warning line")
    assert "info line" not in log.read_text() + stderr.getvalue()
    assert "warning line" in log.read_text() and "warning line" in stderr.getvalue()


def test_missing_file_variable_is_a_clear_error(handler_module, monkeypatch):
    monkeypatch.delenv("GPU_FLEET_VLLM_LOG_FILE", raising=False)
    with pytest.raises(ValueError) as err:
        logging.config.dictConfig(_render())
    # dictConfig wraps it; the traceback vLLM prints shows the cause
    assert str(err.value) == "Unable to configure handler 'file'"
    assert "GPU_FLEET_VLLM_LOG_FILE is not set" in str(err.value.__cause__)


def test_uvicorn_access_log_reaches_both_when_this_file_is_uvicorns_log_config(handler_module, monkeypatch, tmp_path):
    """vLLM 0.32 hands VLLM_LOGGING_CONFIG_PATH to uvicorn as its log_config: uvicorn's access lines
    (logger uvicorn.access, INFO, message and args as uvicorn logs them) must still be written."""
    log = tmp_path / "n0-0.log"
    monkeypatch.setenv("GPU_FLEET_VLLM_LOG_FILE", str(log))
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    logging.config.dictConfig(_render())
    logging.getLogger("uvicorn.access").info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5", "POST", "/v1/completions",
                                             "1.1", 200)
    logging.getLogger("uvicorn.error").info("Application startup complete.")
    line = '127.0.0.1:5 - "POST /v1/completions HTTP/1.1" 200'
    assert line in log.read_text() and line in stderr.getvalue()
    assert "Application startup complete." in log.read_text()
