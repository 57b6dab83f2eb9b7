# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of the vLLM stand-in (tests/simulator/vllm_standin), a TEST-ONLY fake of vLLM 0.6.3.

The server runs as a subprocess on 127.0.0.1 with a free port. Its model is a config.json built
from the Qwen2.5-7B-Instruct row of tests/fixtures/models/qwen2.5-family.tsv, and "nvidia-smi" is a
script that prints the real `nvidia-smi -L` capture of tests/fixtures/real/h200_vm/ (one H200).
Expected values are read from those fixtures (and the real vLLM error capture), never from the
code under test.
"""

import ast
import csv
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
STANDIN = os.path.join(REPO, "tests", "simulator", "vllm_standin")
FIXTURES = os.path.join(REPO, "tests", "fixtures")
SMI_L = os.path.join(FIXTURES, "real", "h200_vm", "smi_L.out")
QWEN_TSV = os.path.join(FIXTURES, "models", "qwen2.5-family.tsv")
VLLM_TP8_ERROR = os.path.join(FIXTURES, "real", "public", "vllm_01_qwen25_7b_tp8_heads28_dcu.txt")
SERVED = "qwen2.5-7b"


def _qwen_row(model="Qwen2.5-7B-Instruct"):
    with open(QWEN_TSV) as handle:
        lines = [line for line in handle if not line.startswith("#")]
    for row in csv.DictReader(lines, delimiter="\t"):
        if row["model"] == model:
            return row
    raise AssertionError("%s not in %s" % (model, QWEN_TSV))


def _config_from_row(row):
    config = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2"}
    for key in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "num_key_value_heads", "vocab_size", "max_position_embeddings"):
        config[key] = int(row[key])
    config["tie_word_embeddings"] = row["tie_word_embeddings"] == "true"
    config["torch_dtype"] = row["torch_dtype"]
    return config


def _smi_gpus():
    """(index, uuid) pairs read from the real `nvidia-smi -L` capture."""
    gpus = []
    with open(SMI_L) as handle:
        for line in handle:
            if line.startswith("GPU "):
                index = int(line.split()[1].rstrip(":"))
                uuid = line.split("(UUID: ")[1].split(")")[0]
                gpus.append((index, uuid))
    return gpus


@pytest.fixture
def model_dir(tmp_path):
    path = tmp_path / "Qwen2.5-7B-Instruct"
    path.mkdir()
    (path / "config.json").write_text(json.dumps(_config_from_row(_qwen_row())))
    return str(path)


@pytest.fixture
def sim_env(tmp_path):
    """Environment with a fake nvidia-smi that replays the real H200 `nvidia-smi -L` capture."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    smi = bindir / "nvidia-smi"
    smi.write_text('#!/bin/sh\n[ "$1" = "-L" ] || exit 2\nexec cat "%s"\n' % SMI_L)
    smi.chmod(0o755)
    env = dict(os.environ)
    env.pop("CUDA_VISIBLE_DEVICES", None)
    env.pop("VLLM_API_KEY", None)
    env["PATH"] = "%s:%s" % (bindir, env.get("PATH", "/usr/bin:/bin"))
    env["PYTHONPATH"] = STANDIN
    env["GPU_SIM_VLLM_STARTUP_DELAY"] = "0"
    env["GPU_SIM_VLLM_STREAM_DELAY"] = "0.05"
    env["GPU_SIM_CLAIMS_DIR"] = str(tmp_path / "claims")  # not the machine's /dev/shm
    return env


def _free_port():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def _vllm(args, env, timeout=30):
    return subprocess.run([sys.executable, "-m", "vllm.scripts"] + args, env=env, timeout=timeout,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          check=False)


def _last_line(text):
    return [line for line in text.splitlines() if line.strip()][-1]


class Server(object):
    def __init__(self, model_dir, env, tmp_path, extra=()):
        self.port = _free_port()
        self.log = tmp_path / ("server-%d.log" % self.port)
        self._out = open(str(self.log), "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "vllm.scripts", "serve", model_dir, "--served-model-name", SERVED,
             "--host", "127.0.0.1", "--port", str(self.port), "--tensor-parallel-size", "1",
             "--pipeline-parallel-size", "1", "--gpu-memory-utilization", "0.9", "--dtype",
             "bfloat16"] + list(extra), env=env, stdout=self._out, stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        while True:
            if self.proc.poll() is not None:
                raise AssertionError("stand-in exited %s:\n%s" % (self.proc.returncode, self.text()))
            try:
                if self.get("/health")[0] == 200:
                    break
            except (OSError, urllib.error.URLError):
                pass
            if time.time() > deadline:
                raise AssertionError("stand-in not healthy after 20 s:\n" + self.text())
            time.sleep(0.1)

    def text(self):
        if not self._out.closed:
            self._out.flush()
        return self.log.read_text()

    def request(self, method, path, body=None, headers=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.port, path), data=data,
                                     method=method, headers=dict(headers or {}))
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, dict(resp.headers), resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers), exc.read()

    def get(self, path, headers=None):
        return self.request("GET", path, headers=headers)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=10)
        finally:
            if not self._out.closed:
                self._out.close()


@pytest.fixture
def server(model_dir, sim_env, tmp_path):
    srv = Server(model_dir, sim_env, tmp_path)
    yield srv
    srv.stop()


def test_health_version_models(server):
    status, headers, body = server.get("/health")
    assert (status, body) == (200, b"")
    assert headers["X-GPU-Sim-Instance"] == str(server.port)
    assert headers["X-GPU-Sim-Pid"] == str(server.proc.pid)
    status, _headers, body = server.get("/version")
    assert status == 200 and json.loads(body) == {"version": "0.6.3.post1+gpusim"}
    status, _headers, body = server.get("/v1/models")
    cards = json.loads(body)["data"]
    assert [card["id"] for card in cards] == [SERVED]
    assert cards[0]["max_model_len"] == int(_qwen_row()["max_position_embeddings"])


def test_completion_names_the_instance(server):
    status, headers, body = server.request("POST", "/v1/completions",
                                           {"model": SERVED, "prompt": "Say hello", "max_tokens": 64})
    assert status == 200
    answer = json.loads(body)
    assert answer["object"] == "text_completion" and answer["model"] == SERVED
    text = answer["choices"][0]["text"]
    assert "instance %d" % server.port in text and "pid %d" % server.proc.pid in text
    assert answer["usage"]["prompt_tokens"] == 2
    assert answer["usage"]["total_tokens"] == 2 + answer["usage"]["completion_tokens"]
    assert headers["X-GPU-Sim-Instance"] == str(server.port)
    status, _headers, body = server.request("POST", "/v1/completions", {"model": "other", "prompt": "x"})
    assert status == 404 and json.loads(body)["message"] == "The model `other` does not exist."
    metrics = server.get("/metrics")[2].decode()
    assert 'vllm:prompt_tokens_total{model_name="%s"} 2.0' % SERVED in metrics
    for name in ("vllm:gpu_cache_usage_perc", "vllm:num_requests_running", "vllm:num_requests_waiting"):
        assert '%s{model_name="%s"} 0.0' % (name, SERVED) in metrics


def _raw_stream(port, path, body):
    """POST over a raw socket; return (status line, headers, [(arrival time, chunk bytes)])."""
    payload = json.dumps(body).encode()
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (path.encode(), len(payload), payload))
    reader = sock.makefile("rb")
    status = reader.readline().decode().strip()
    headers = {}
    while True:
        line = reader.readline().decode()
        if line in ("\r\n", ""):
            break
        key, _colon, value = line.partition(":")
        headers[key.strip().lower()] = value.strip()
    chunks = []
    while True:
        size = int(reader.readline().strip(), 16)
        if size == 0:
            break
        chunks.append((time.time(), reader.read(size)))
        assert reader.read(2) == b"\r\n"
    sock.close()
    return status, headers, chunks


def test_stream_is_chunked_server_sent_events(server):
    status, headers, chunks = _raw_stream(server.port, "/v1/completions",
                                          {"model": SERVED, "prompt": "Say hello", "stream": True})
    assert status == "HTTP/1.1 200 OK"
    assert headers["transfer-encoding"] == "chunked"
    assert headers["content-type"].startswith("text/event-stream")
    assert headers["x-gpu-sim-instance"] == str(server.port)
    events = [data.decode() for _arrival, data in chunks]
    assert all(event.startswith("data: ") and event.endswith("\n\n") for event in events)
    assert events[-1] == "data: [DONE]\n\n"
    parsed = [json.loads(event[len("data: "):]) for event in events[:-1]]
    assert len(parsed) >= 3
    assert all(p["object"] == "text_completion" and p["model"] == SERVED for p in parsed)
    assert parsed[-1]["choices"][0]["finish_reason"] == "stop"
    assert "instance %d" % server.port in "".join(p["choices"][0]["text"] for p in parsed)
    # flushed one by one, GPU_SIM_VLLM_STREAM_DELAY (0.05 s) apart, not buffered into one write
    assert chunks[len(parsed) - 1][0] - chunks[0][0] >= 0.05 * (len(parsed) - 1) * 0.5


def test_chat_stream_starts_with_role(server):
    _status, _headers, chunks = _raw_stream(server.port, "/v1/chat/completions",
                                            {"model": SERVED, "messages": [{"role": "user", "content": "hi"}],
                                             "stream": True, "max_tokens": 3})
    parsed = [json.loads(data.decode()[len("data: "):]) for _arrival, data in chunks[:-1]]
    assert parsed[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert len(parsed) == 1 + 3
    assert parsed[-1]["choices"][0]["finish_reason"] == "length"


def test_api_key_guards_only_v1(model_dir, sim_env, tmp_path):
    env = dict(sim_env, VLLM_API_KEY="from-env")
    srv = Server(model_dir, env, tmp_path, extra=["--api-key", "from-flag"])
    try:
        assert srv.get("/v1/models")[0] == 401
        assert json.loads(srv.get("/v1/models")[2]) == {"error": "Unauthorized"}
        # VLLM_API_KEY wins over --api-key, as in vLLM 0.6.3
        assert srv.get("/v1/models", {"Authorization": "Bearer from-flag"})[0] == 401
        assert srv.get("/v1/models", {"Authorization": "Bearer from-env"})[0] == 200
        assert srv.get("/health")[0] == 200
        assert srv.get("/metrics")[0] == 200
        assert srv.get("/version")[0] == 200
    finally:
        assert srv.stop() == 0


def test_sigterm_exits_zero_and_busy_port_fails(server, model_dir, sim_env):
    busy = _vllm(["serve", model_dir, "--host", "127.0.0.1", "--port", str(server.port)], sim_env)
    assert busy.returncode == 1
    assert "Address already in use" in _last_line(busy.stderr)
    assert server.stop() == 0
    log = server.text()
    assert "Uvicorn running on http://127.0.0.1:%d" % server.port in log
    assert "Started server process [%d]" % server.proc.pid in log
    assert "Finished server process [%d]" % server.proc.pid in log


def test_tp3_fails_like_vllm(model_dir, sim_env):
    heads = int(_qwen_row()["num_attention_heads"])
    result = _vllm(["serve", model_dir, "--tensor-parallel-size", "3"], sim_env)
    assert result.returncode == 1
    assert _last_line(result.stderr) == (
        "ValueError: Total number of attention heads (%d) must be divisible by tensor parallel "
        "size (3)." % heads)
    assert "Traceback (most recent call last):" in result.stderr


def test_tp8_error_line_matches_real_capture(model_dir, sim_env):
    with open(VLLM_TP8_ERROR) as handle:
        expected = _last_line(handle.read())
    result = _vllm(["serve", model_dir, "--tensor-parallel-size", "8"], sim_env)
    assert result.returncode == 1 and _last_line(result.stderr) == expected


def test_gpu_count_comes_from_nvidia_smi(model_dir, sim_env):
    count = len(_smi_gpus())
    result = _vllm(["serve", model_dir, "--tensor-parallel-size", "2"], sim_env)
    assert result.returncode == 1
    assert _last_line(result.stderr) == (
        "AssertionError: please set tensor_parallel_size (2) to less than max local gpu count (%d)"
        % count)
    hidden = _vllm(["serve", model_dir], dict(sim_env, CUDA_VISIBLE_DEVICES=""))
    assert _last_line(hidden.stderr) == "RuntimeError: No CUDA GPUs are available"


def test_unknown_flag_rejected(model_dir, sim_env):
    result = _vllm(["serve", model_dir, "--tensor-parallel-size", "1", "--numa-bind"], sim_env)
    assert result.returncode == 2
    assert "unrecognized arguments: --numa-bind" in result.stderr


def test_cuda_visible_devices_filter():
    sys.path.insert(0, STANDIN)
    try:
        from vllm import engine_standin
    finally:
        sys.path.remove(STANDIN)
    with open(SMI_L) as handle:
        gpus = engine_standin.parse_smi_list(handle.read())
    assert [(g["index"], g["uuid"]) for g in gpus] == _smi_gpus()
    index, uuid = _smi_gpus()[0]
    assert engine_standin.filter_visible(gpus, None) == gpus
    assert engine_standin.filter_visible(gpus, str(index)) == gpus
    assert engine_standin.filter_visible(gpus, uuid[:12]) == gpus
    assert engine_standin.filter_visible(gpus, "") == []
    assert engine_standin.filter_visible(gpus, "-1,%d" % index) == []
    assert engine_standin.filter_visible(gpus, "%d,%d" % (index, index)) == gpus


def test_version_satisfies_real_pin_and_code_parses_on_python39():
    from packaging import specifiers
    from packaging import version as packaging_version
    with open(os.path.join(STANDIN, "pyproject.toml")) as handle:
        version = [line.split('"')[1] for line in handle if line.startswith("version = ")][0]
    assert version == "0.6.3.post1+gpusim"
    assert specifiers.SpecifierSet("==0.6.3.post1").contains(packaging_version.Version(version))
    for root, _dirs, files in os.walk(os.path.join(STANDIN, "vllm")):
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(root, name)) as handle:
                    ast.parse(handle.read(), filename=name, feature_version=(3, 9))


def _claims(path):
    with open(os.path.join(str(path), "claims.jsonl")) as handle:
        return [json.loads(line) for line in handle]


def test_gpu_claim_ledger_records_claims_releases_and_conflicts(model_dir, sim_env, tmp_path):
    """Two servers on the same GPU: the second one's claim is recorded as a conflict; a server
    started after the first one exited is not."""
    claims = tmp_path / "claims"
    env = dict(sim_env, GPU_SIM_CLAIMS_DIR=str(claims), CUDA_VISIBLE_DEVICES="0")
    first = Server(model_dir, env, tmp_path)
    second = Server(model_dir, env, tmp_path)
    assert second.stop() == 0 and first.stop() == 0
    events = _claims(claims)
    assert [(e["event"], e["pid"]) for e in events] == [
        ("claim", first.proc.pid), ("conflict", second.proc.pid), ("claim", second.proc.pid),
        ("release", second.proc.pid), ("release", first.proc.pid)]
    assert events[1]["holder"] == first.proc.pid and events[1]["gpu"] == 0
    third = Server(model_dir, env, tmp_path)
    assert third.stop() == 0
    assert [e["event"] for e in _claims(claims)[5:]] == ["claim", "release"]


def test_gpu_claim_of_a_killed_server_is_no_conflict(model_dir, sim_env, tmp_path):
    claims = tmp_path / "claims"
    env = dict(sim_env, GPU_SIM_CLAIMS_DIR=str(claims), CUDA_VISIBLE_DEVICES="0")
    first = Server(model_dir, env, tmp_path)
    first.proc.send_signal(signal.SIGKILL)
    first.proc.wait(timeout=10)
    second = Server(model_dir, env, tmp_path)
    assert second.stop() == 0
    assert [(e["event"], e["pid"]) for e in _claims(claims)] == [
        ("claim", first.proc.pid), ("claim", second.proc.pid), ("release", second.proc.pid)]


# --- logging configuration (VLLM_CONFIGURE_LOGGING / VLLM_LOGGING_CONFIG_PATH, as in vLLM 0.6.3) ---

def _logging_config(path, stream="ext://sys.stderr"):
    """The shape the vllm_server role renders: vllm.* to a stream and to a WatchedFileHandler."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"vllm": {"format": "%(levelname)s %(message)s"}},
        "handlers": {
            "journal": {"class": "logging.StreamHandler", "formatter": "vllm", "stream": stream},
            "file": {"class": "logging.handlers.WatchedFileHandler", "formatter": "vllm",
                     "filename": str(path)},
        },
        "loggers": {"vllm": {"handlers": ["journal", "file"], "level": "DEBUG", "propagate": False}},
    }


def test_default_logging_goes_to_stdout(model_dir, sim_env, tmp_path):
    env = dict(sim_env)
    env.pop("VLLM_LOGGING_CONFIG_PATH", None)
    env.pop("VLLM_CONFIGURE_LOGGING", None)
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "vllm.scripts", "serve", model_dir, "--port", str(port)], env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    time.sleep(1.5)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=10)
    assert "vLLM API server version" in out  # vLLM's default handler: stdout
    assert "vLLM API server version" not in err
    assert "Uvicorn running on" in err  # uvicorn's own lines: stderr


def test_logging_config_path_to_stream_and_watched_file(model_dir, sim_env, tmp_path):
    log = tmp_path / "n0-0.log"
    cfg = tmp_path / "logging.json"
    cfg.write_text(json.dumps(_logging_config(log)))
    env = dict(sim_env, VLLM_CONFIGURE_LOGGING="1", VLLM_LOGGING_CONFIG_PATH=str(cfg))
    srv = Server(model_dir, env, tmp_path)
    try:
        assert "INFO vLLM API server version" in log.read_text()
        # logrotate without copytruncate: rename, then a request logs into a new file
        os.rename(str(log), str(log) + ".1")
        status = srv.request("POST", "/v1/completions",
                             {"model": SERVED, "prompt": "rotated-marker", "max_tokens": 1})[0]
        assert status == 200
        assert "rotated-marker" in log.read_text()
        assert "rotated-marker" not in (tmp_path / "n0-0.log.1").read_text()
    finally:
        assert srv.stop() == 0
    text = srv.text()  # the process's stderr and stdout
    assert "INFO vLLM API server version" in text
    assert "rotated-marker" in text


def test_logging_config_path_errors_like_vllm(model_dir, sim_env, tmp_path):
    missing = str(tmp_path / "nope.json")
    result = _vllm(["serve", model_dir], dict(sim_env, VLLM_LOGGING_CONFIG_PATH=missing))
    assert result.returncode == 1
    assert _last_line(result.stderr).startswith("RuntimeError: ('Could not load logging config. "
                                                "File does not exist: %s'")
    not_a_dict = tmp_path / "list.json"
    not_a_dict.write_text("[]")
    result = _vllm(["serve", model_dir], dict(sim_env, VLLM_LOGGING_CONFIG_PATH=str(not_a_dict)))
    assert result.returncode == 1
    assert "ValueError: ('Invalid logging config. Expected Dict, got %s.', 'list')" in result.stderr
    cfg = tmp_path / "ok.json"
    cfg.write_text(json.dumps(_logging_config(tmp_path / "x.log")))
    result = _vllm(["serve", model_dir], dict(sim_env, VLLM_CONFIGURE_LOGGING="0",
                                              VLLM_LOGGING_CONFIG_PATH=str(cfg)))
    assert result.returncode == 1
    assert "VLLM_LOGGING_CONFIG_PATH implies VLLM_CONFIGURE_LOGGING" in _last_line(result.stderr)


def test_refused_request_body_is_read_before_the_next_request_on_the_connection(model_dir, sim_env, tmp_path):
    """nginx reuses upstream connections (keepalive): a 401/404 answered without reading the
    request's body left that body in the stream, where it was read as the next request line."""
    import http.client
    srv = Server(model_dir, dict(sim_env, VLLM_API_KEY="k"), tmp_path)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
        body = json.dumps({"model": SERVED, "prompt": "hi", "max_tokens": 2})
        for path, status in (("/v1/completions", 401), ("/no-such-path", 404), ("/health", 200)):
            conn.request("POST" if path != "/health" else "GET", path, body=body if path != "/health" else None,
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            resp.read()
            assert resp.status == status, (path, resp.status)
        conn.close()
    finally:
        assert srv.stop() == 0


# --- the NCCL wrapper as vLLM 0.6.3 has it (vllm/pynccl_standin.py) --------------------------------

def _pynccl():
    sys.path.insert(0, STANDIN)
    try:
        from vllm import pynccl_standin
    finally:
        sys.path.remove(STANDIN)
    return pynccl_standin


@pytest.fixture(scope="module")
def standin_libnccl(tmp_path_factory):
    """The simulator's libnccl (tests/simulator/packages/src/nccl_standin.c) built as build-repo.sh
    builds it, for NCCL 2.14.3+cuda11.7."""
    src = os.path.join(REPO, "tests", "simulator", "packages", "src")
    tmp = tmp_path_factory.mktemp("libnccl")
    with open(os.path.join(src, "nccl.h.in")) as handle:
        header = handle.read()
    values = {"NCCL_FULL": "2.14.3+cuda11.7", "NCCL_MAJOR": "2", "NCCL_MINOR": "14", "NCCL_PATCH": "3",
              "NCCL_SUFFIX": "", "NCCL_CODE": "21403"}
    for key, value in values.items():
        header = header.replace("@%s@" % key, value)
    (tmp / "nccl.h").write_text(header)
    lib = tmp / "libnccl.so.2"
    subprocess.run(["gcc", "-shared", "-fPIC", "-I", str(tmp), '-DNCCL_FULL_VERSION="2.14.3+cuda11.7"',
                    "-o", str(lib), os.path.join(src, "nccl_standin.c")], check=True)
    return str(lib)


def _init_communicator(world_size, **env):
    """stdout and the answer of init_communicator in a fresh stand-in process (its loggers print to
    stdout, as vLLM's default configuration does)."""
    code = ("import sys; from vllm import pynccl_standin as p; "
            "print('ANSWER', p.init_communicator(int(sys.argv[1])))")
    proc = subprocess.run([sys.executable, "-c", code, str(world_size)], check=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True,
                          env=dict(os.environ, PYTHONPATH=STANDIN, **env))
    return proc.stdout


def test_nccl_line_of_a_group_names_the_library_version(standin_libnccl):
    out = _init_communicator(2, VLLM_NCCL_SO_PATH=standin_libnccl)
    assert "pynccl" in out and "vLLM is using nccl==2.14.3" in out and "ANSWER 2.14.3" in out


def test_no_communicator_for_a_group_of_one(standin_libnccl):
    out = _init_communicator(1, VLLM_NCCL_SO_PATH=standin_libnccl)
    assert "nccl==" not in out and "ANSWER None" in out


def test_wrapper_of_a_later_release_drops_the_communicator_silently(standin_libnccl):
    out = _init_communicator(2, VLLM_NCCL_SO_PATH=standin_libnccl,
                             GPU_SIM_VLLM_NCCL_EXTRA_SYMBOLS="ncclCommWindowRegister,ncclCommWindowDeregister")
    assert "nccl==" not in out and "ANSWER None" in out


def test_version_code_formatting_of_vllm():
    # pynccl_wrapper.py of 0.6.3.post1, lines 228-233: 21903 -> "2.19.3"
    assert _pynccl().version_string(21903) == "2.19.3" and _pynccl().version_string(22707) == "2.27.7"
