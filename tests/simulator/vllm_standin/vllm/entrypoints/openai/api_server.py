# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""OpenAI-shaped HTTP server of the vLLM stand-in (gpu-fleet simulator, TEST ONLY).

No model is loaded and no GPU is touched: the answers are generated text that names the instance
that produced it, so a test behind a load balancer can see which instance answered. Routes,
status codes, bodies and the start-up sequence follow vLLM 0.6.3.post1's OpenAI server
(vllm/entrypoints/openai/api_server.py); see the README for what is kept and what is added.

Run as ``vllm serve MODEL ...`` or ``python -m vllm.entrypoints.openai.api_server --model MODEL ...``.
"""

import json
import os
import re
import signal
import socket
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from vllm import engine_standin, pynccl_standin
from vllm.logger import init_logger, uvicorn_log
from vllm.version import STANDS_IN_FOR, __version__

TIMEOUT_KEEP_ALIVE = 5  # seconds, as vLLM passes to uvicorn

# Cannot use __name__ (vLLM's comment; it keeps this logger name)
logger = init_logger("vllm.entrypoints.openai.api_server")

_ROUTES = (
    ("/openapi.json", "GET, HEAD"), ("/docs", "GET, HEAD"), ("/redoc", "GET, HEAD"),
    ("/health", "GET"), ("/tokenize", "POST"), ("/detokenize", "POST"), ("/v1/models", "GET"),
    ("/version", "GET"), ("/v1/chat/completions", "POST"), ("/v1/completions", "POST"),
    ("/v1/embeddings", "POST"),
)
_GET_PATHS = ("/health", "/version", "/v1/models", "/metrics", "/metrics/", "/gpu-sim/info")
_POST_PATHS = ("/v1/completions", "/v1/chat/completions")
_WORD = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def cpu_list_text(cpus):
    """[0, 1, 2, 5] -> "0-2,5" (the kernel's cpulist format)."""
    runs = []  # [first, last] of each run of consecutive cpus
    for cpu in sorted(cpus):
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join("%d" % first if first == last else "%d-%d" % (first, last) for first, last in runs)


def _cpu_affinity():
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return []


def count_tokens(text):
    """A rough token count (words and punctuation); the stand-in has no tokenizer."""
    if not isinstance(text, str):
        return 0
    return len(_WORD.findall(text))


class StandinState(object):
    """What one server instance knows and counts."""

    def __init__(self, args, config, max_model_len, gpus, visible, api_key):
        self.args = args
        self.config = config
        self.max_model_len = max_model_len
        self.gpus = gpus
        self.visible = visible
        self.api_key = api_key
        self.served_names = list(args.served_model_name or [args.model])
        self.metric_name = self.served_names[0]
        self.pid = os.getpid()
        self.hostname = socket.gethostname()
        self.port = args.port
        self.created = int(time.time())
        self.cpu_affinity = _cpu_affinity()
        self.log_stats = not args.disable_log_stats
        self.log_requests = not args.disable_log_requests
        try:
            self.stream_delay = float(os.environ.get("GPU_SIM_VLLM_STREAM_DELAY", "0.05"))
        except ValueError:
            self.stream_delay = 0.05
        self.lock = threading.Lock()
        self.running = 0
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.success = {"stop": 0, "length": 0}
        self.activity = False

    # -- counters ---------------------------------------------------------------------------
    def begin(self, prompt_tokens):
        with self.lock:
            self.running += 1
            self.prompt_tokens += prompt_tokens
            self.activity = True

    def end(self, generated, finish_reason):
        with self.lock:
            self.running -= 1
            self.generation_tokens += generated
            self.success[finish_reason] = self.success.get(finish_reason, 0) + 1
            self.activity = True

    def kv_cache_usage(self):
        """Simulated KV-cache use as vLLM reports it: a 0-1 fraction.

        TEST-ONLY control (not in vLLM): a file $GPU_SIM_KV_CACHE_DIR/<port> (default directory
        /run/gpu-sim/kv-cache-usage) holding a number makes the server report that value, so tests
        can plant a full KV cache; otherwise 0.02 per running request."""
        planted = os.path.join(os.environ.get("GPU_SIM_KV_CACHE_DIR", "/run/gpu-sim/kv-cache-usage"),
                               str(self.port))
        try:
            with open(planted, "r") as handle:
                return min(1.0, max(0.0, float(handle.read().strip())))
        except (OSError, ValueError):
            pass
        with self.lock:
            return min(1.0, 0.02 * self.running)

    # -- texts ------------------------------------------------------------------------------
    def reply_pieces(self, model):
        """The generated "tokens": they name the instance that answered."""
        return ["gpu-sim", " instance", " %d" % self.port, " pid", " %d" % self.pid,
                " host", " %s" % self.hostname, " model", " %s" % model, " says", " hello", "."]

    def info(self):
        return {
            "standin": "gpu-fleet simulator stand-in of vLLM %s (test only)" % STANDS_IN_FOR,
            "version": __version__,
            "pid": self.pid,
            "host": self.hostname,
            "port": self.port,
            "served_model_names": self.served_names,
            "model": self.args.model,
            "max_model_len": self.max_model_len,
            "tensor_parallel_size": self.args.tensor_parallel_size,
            "pipeline_parallel_size": self.args.pipeline_parallel_size,
            "dtype": self.args.dtype,
            "gpu_memory_utilization": self.args.gpu_memory_utilization,
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "gpus_listed": self.gpus,
            "gpus_visible": self.visible,
            "cpu_affinity": self.cpu_affinity,
            "cpu_affinity_list": cpu_list_text(self.cpu_affinity),
            "argv": sys.argv,
        }

    def metrics_text(self):
        """Prometheus text format (0.0.4), names and help texts as vLLM 0.6.3 exports them."""
        lines = [
            "# HELP python_info Python platform information",
            "# TYPE python_info gauge",
            'python_info{implementation="%s",major="%d",minor="%d",patchlevel="%d",version="%s"} 1.0'
            % (sys.implementation.name.capitalize().replace("Cpython", "CPython"),
               sys.version_info[0], sys.version_info[1], sys.version_info[2],
               "%d.%d.%d" % sys.version_info[:3]),
        ]
        if not self.log_stats:
            # vLLM 0.6.3 registers its vllm:* metrics only in the stat logger, which
            # --disable-log-stats turns off.
            return "\n".join(lines) + "\n"
        label = '{model_name="%s"}' % self.metric_name.replace("\\", "\\\\").replace('"', '\\"')
        with self.lock:
            running = self.running
            prompt = self.prompt_tokens
            generation = self.generation_tokens
            success = dict(self.success)
        usage = self.kv_cache_usage()

        def metric(name, kind, help_text, value, labels=label):
            lines.append("# HELP %s %s" % (name, help_text))
            lines.append("# TYPE %s %s" % (name, kind))
            lines.append("%s%s %s" % (name, labels, float(value)))

        metric("vllm:num_requests_running", "gauge",
               "Number of requests currently running on GPU.", running)
        metric("vllm:num_requests_swapped", "gauge",
               "Number of requests swapped to CPU.", 0)
        metric("vllm:num_requests_waiting", "gauge",
               "Number of requests waiting to be processed.", 0)
        metric("vllm:gpu_cache_usage_perc", "gauge",
               "GPU KV-cache usage. 1 means 100 percent usage.", usage)
        metric("vllm:cpu_cache_usage_perc", "gauge",
               "CPU KV-cache usage. 1 means 100 percent usage.", 0)
        metric("vllm:prompt_tokens_total", "counter",
               "Number of prefill tokens processed.", prompt)
        metric("vllm:generation_tokens_total", "counter",
               "Number of generation tokens processed.", generation)
        lines.append("# HELP vllm:request_success_total Count of successfully processed requests.")
        lines.append("# TYPE vllm:request_success_total counter")
        for reason in sorted(success):
            lines.append('vllm:request_success_total{finished_reason="%s",%s %s'
                         % (reason, label[1:], float(success[reason])))
        return "\n".join(lines) + "\n"


def _error_body(message, err_type, code):
    return {"object": "error", "message": message, "type": err_type, "param": None, "code": code}


class _HTTPError(Exception):
    def __init__(self, status, body):
        Exception.__init__(self, body)
        self.status = status
        self.body = body


class StandinHandler(BaseHTTPRequestHandler):
    """One HTTP/1.1 connection (keep-alive, 5 s idle timeout like vLLM's uvicorn)."""

    protocol_version = "HTTP/1.1"
    server_version = "uvicorn"
    sys_version = ""
    timeout = TIMEOUT_KEEP_ALIVE
    state = None  # set on the subclass made per server

    # -- logging ----------------------------------------------------------------------------
    def version_string(self):
        return self.server_version

    def log_request(self, code="-", size="-"):
        try:
            phrase = self.responses[int(code)][0]
        except (KeyError, ValueError, TypeError):
            phrase = ""
        uvicorn_log('%s:%d - "%s" %s %s' % (self.client_address[0], self.client_address[1],
                                            self.requestline, code, phrase), stream=sys.stdout)

    def log_error(self, format, *args):  # noqa: A002 - BaseHTTPRequestHandler's signature
        # idle keep-alive timeouts and client disconnects are routine, uvicorn is quiet on them
        return

    # -- helpers ----------------------------------------------------------------------------
    def _common_headers(self):
        state = self.state
        self.send_header("X-GPU-Sim-Instance", str(state.port))
        self.send_header("X-GPU-Sim-Pid", str(state.pid))
        self.send_header("X-GPU-Sim-Host", state.hostname)
        self.send_header("X-GPU-Sim-Cuda-Visible-Devices",
                         os.environ.get("CUDA_VISIBLE_DEVICES", "(unset)"))
        self.send_header("X-GPU-Sim-Cpu-Affinity", cpu_list_text(state.cpu_affinity))

    def _send(self, status, body=b"", content_type=None, extra_headers=None):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode("utf-8")
            content_type = content_type or "application/json"
        elif isinstance(body, str):
            body = body.encode("utf-8")
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self._common_headers()
        for key, value in (extra_headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)

    def _read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            data = b""
            while True:
                size_line = self.rfile.readline()
                size = int(size_line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                data += self.rfile.read(size)
                self.rfile.readline()
            return data
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _authorized(self, path):
        key = self.state.api_key
        if not key or not path.startswith("/v1"):
            return True
        return self.headers.get("Authorization") == "Bearer " + key

    def _route(self, method):
        path = urlsplit(self.path).path
        try:
            if not self._authorized(path):
                # uvicorn reads a request's body before it answers, also when it refuses it: a
                # body left unread on a keep-alive connection would be taken for the next request
                self._read_body()
                self._send(401, {"error": "Unauthorized"})
                return
            if method == "GET" and path in _GET_PATHS:
                self._get(path)
            elif method == "POST" and path in _POST_PATHS:
                self._post(path)
            elif path in _GET_PATHS or path in _POST_PATHS:
                self._read_body()
                self._send(405, {"detail": "Method Not Allowed"})
            else:
                self._read_body()
                self._send(404, {"detail": "Not Found"})
        except _HTTPError as exc:
            self._send(exc.status, exc.body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def do_GET(self):  # noqa: N802 - BaseHTTPRequestHandler naming
        self._route("GET")

    def do_POST(self):  # noqa: N802
        self._route("POST")

    def do_PUT(self):  # noqa: N802
        self._route("PUT")

    def do_DELETE(self):  # noqa: N802
        self._route("DELETE")

    # -- GET --------------------------------------------------------------------------------
    def _get(self, path):
        state = self.state
        if path == "/health":
            self._send(200)
        elif path == "/version":
            self._send(200, {"version": __version__})
        elif path == "/v1/models":
            self._send(200, {"object": "list", "data": [self._model_card(name) for name in state.served_names]})
        elif path in ("/metrics", "/metrics/"):
            self._send(200, state.metrics_text(), content_type="text/plain; version=0.0.4; charset=utf-8")
        elif path == "/gpu-sim/info":
            self._send(200, state.info())

    def _model_card(self, name):
        state = self.state
        return {
            "id": name, "object": "model", "created": state.created, "owned_by": "vllm",
            "root": state.args.model, "parent": None, "max_model_len": state.max_model_len,
            "permission": [{
                "id": "modelperm-%s" % uuid.uuid4().hex, "object": "model_permission",
                "created": state.created, "allow_create_engine": False, "allow_sampling": True,
                "allow_logprobs": True, "allow_search_indices": False, "allow_view": True,
                "allow_fine_tuning": False, "organization": "*", "group": None, "is_blocking": False,
            }],
        }

    # -- POST -------------------------------------------------------------------------------
    def _parse_request(self):
        raw = self._read_body()
        try:
            request = json.loads(raw.decode("utf-8") or "null")
        except ValueError as exc:
            raise _HTTPError(400, _error_body("Invalid JSON body: %s" % exc, "BadRequestError", 400))
        if not isinstance(request, dict):
            raise _HTTPError(400, _error_body("The request body must be a JSON object.",
                                              "BadRequestError", 400))
        model = request.get("model")
        if not isinstance(model, str):
            raise _HTTPError(400, _error_body("[{'type': 'missing', 'loc': ('body', 'model'), "
                                              "'msg': 'Field required'}]", "BadRequestError", 400))
        if model not in self.state.served_names:
            raise _HTTPError(404, _error_body("The model `%s` does not exist." % model,
                                              "NotFoundError", 404))
        return request

    def _post(self, path):
        state = self.state
        request = self._parse_request()
        chat = path == "/v1/chat/completions"
        if chat:
            messages = request.get("messages")
            if not isinstance(messages, list) or not messages:
                raise _HTTPError(400, _error_body("messages: a non-empty list is required",
                                                  "BadRequestError", 400))
            prompt_tokens = 0
            for message in messages:
                content = message.get("content") if isinstance(message, dict) else None
                if isinstance(content, list):
                    content = " ".join(part.get("text", "") for part in content if isinstance(part, dict))
                prompt_tokens += count_tokens(content) + 4  # role markers of the chat template
            prompt_text = json.dumps(messages)[:200]
            default_max = None
        else:
            prompt = request.get("prompt")
            if isinstance(prompt, list):
                prompt_tokens = sum(len(p) if isinstance(p, list) else count_tokens(p) for p in prompt)
                if prompt and all(isinstance(p, int) for p in prompt):
                    prompt_tokens = len(prompt)
            elif isinstance(prompt, str):
                prompt_tokens = count_tokens(prompt)
            else:
                raise _HTTPError(400, _error_body("prompt: a string or a list is required",
                                                  "BadRequestError", 400))
            prompt_text = prompt if isinstance(prompt, str) else json.dumps(prompt)[:200]
            default_max = 16
        max_tokens = request.get("max_tokens", request.get("max_completion_tokens", default_max))
        if max_tokens is not None:
            if not isinstance(max_tokens, int) or max_tokens < 1:
                raise _HTTPError(400, _error_body("max_tokens must be at least 1, got %s." % max_tokens,
                                                  "BadRequestError", 400))
            if prompt_tokens + max_tokens > state.max_model_len:
                raise _HTTPError(400, _error_body(
                    "This model's maximum context length is %d tokens. However, you requested %d "
                    "tokens (%d in the messages, %d in the completion). Please reduce the length of "
                    "the messages or completion." % (state.max_model_len, prompt_tokens + max_tokens,
                                                     prompt_tokens, max_tokens),
                    "BadRequestError", 400))
        pieces = state.reply_pieces(request["model"])
        finish_reason = "stop"
        if max_tokens is not None and max_tokens < len(pieces):
            pieces = pieces[:max_tokens]
            finish_reason = "length"
        request_id = ("chat-%s" if chat else "cmpl-%s") % uuid.uuid4().hex
        if state.log_requests:
            logger.info("Received request %s: prompt: %r, params: SamplingParams(n=1, "
                        "temperature=%s, max_tokens=%s), lora_request: None, "
                        "prompt_adapter_request: None.", request_id, prompt_text,
                        request.get("temperature", 1.0), max_tokens)
            logger.info("Added request %s.", request_id)
        state.begin(prompt_tokens)
        try:
            if request.get("stream"):
                include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
                self._stream(chat, request_id, request["model"], pieces, finish_reason,
                             prompt_tokens, include_usage)
            else:
                self._send(200, self._full_response(chat, request_id, request["model"], pieces,
                                                    finish_reason, prompt_tokens))
        finally:
            state.end(len(pieces), finish_reason)
            if state.log_requests:
                logger.info("Finished request %s.", request_id)

    def _full_response(self, chat, request_id, model, pieces, finish_reason, prompt_tokens):
        text = "".join(pieces)
        usage = {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens + len(pieces),
                 "completion_tokens": len(pieces)}
        if chat:
            choice = {"index": 0, "message": {"role": "assistant", "content": text, "tool_calls": []},
                      "logprobs": None, "finish_reason": finish_reason, "stop_reason": None}
            return {"id": request_id, "object": "chat.completion", "created": int(time.time()),
                    "model": model, "choices": [choice], "usage": usage, "prompt_logprobs": None}
        choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish_reason,
                  "stop_reason": None, "prompt_logprobs": None}
        return {"id": request_id, "object": "text_completion", "created": int(time.time()),
                "model": model, "choices": [choice], "usage": usage}

    def _write_chunk(self, payload):
        data = ("data: %s\n\n" % payload).encode("utf-8")
        self.wfile.write(("%X\r\n" % len(data)).encode("ascii") + data + b"\r\n")
        self.wfile.flush()

    def _stream(self, chat, request_id, model, pieces, finish_reason, prompt_tokens, include_usage):
        created = int(time.time())
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        self._common_headers()
        self.end_headers()
        self.wfile.flush()
        kind = "chat.completion.chunk" if chat else "text_completion"

        def chunk(choice, usage=None):
            body = {"id": request_id, "object": kind, "created": created, "model": model,
                    "choices": [choice] if choice is not None else []}
            if usage is not None:
                body["usage"] = usage
            self._write_chunk(json.dumps(body))

        if chat:
            chunk({"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                   "finish_reason": None})
        for position, piece in enumerate(pieces):
            time.sleep(self.state.stream_delay)
            last = position == len(pieces) - 1
            if chat:
                choice = {"index": 0, "delta": {"content": piece}, "logprobs": None,
                          "finish_reason": finish_reason if last else None}
            else:
                choice = {"index": 0, "text": piece, "logprobs": None,
                          "finish_reason": finish_reason if last else None}
            if last:
                choice["stop_reason"] = None
            chunk(choice)
        if include_usage:
            chunk(None, {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens + len(pieces),
                         "completion_tokens": len(pieces)})
        self._write_chunk("[DONE]")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class StandinHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True  # uvicorn sets SO_REUSEADDR


def _stats_loop(state, stop):
    """vLLM's periodic engine stats line (every 10 s while there is activity)."""
    last = time.time()
    last_prompt = last_gen = 0
    while not stop.wait(10.0):
        with state.lock:
            active = state.activity or state.running
            state.activity = False
            prompt, gen, running = state.prompt_tokens, state.generation_tokens, state.running
        now = time.time()
        if active:
            span = max(now - last, 1e-6)
            logger.info("Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f "
                        "tokens/s, Running: %d reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache "
                        "usage: %.1f%%, CPU KV cache usage: 0.0%%.", (prompt - last_prompt) / span,
                        (gen - last_gen) / span, running, 100.0 * state.kv_cache_usage())
        last, last_prompt, last_gen = now, prompt, gen


def run_server(args):
    """Start-up sequence of vLLM 0.6.3's run_server, then serve until SIGTERM/SIGINT. Returns 0."""
    logger.info("vLLM API server version %s", __version__)
    logger.info("args: %s", args)
    logger.info("gpu-fleet simulator stand-in of vLLM %s (TEST ONLY): no model is loaded and no "
                "GPU is used; answers name the instance that served them.", STANDS_IN_FOR)

    # vLLM 0.6.3 binds a temporary socket on ("", port) before the engine starts (not listening:
    # connections are refused until uvicorn takes over) so a busy port fails at once.
    temp_socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    temp_socket.bind(("", args.port))

    stop = threading.Event()
    holder = {"server": None}

    def on_signal(signum, _frame):
        stop.set()
        server = holder["server"]
        if server is not None:
            threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    token = os.environ.get("VLLM_API_KEY") or args.api_key
    config = engine_standin.load_model_config(args.model)
    max_model_len = engine_standin.check_config(args, config)
    tp, pp = args.tensor_parallel_size, args.pipeline_parallel_size
    if tp * pp > 1:
        logger.info("Defaulting to use mp for distributed inference")
    logger.info("Initializing an LLM engine (v%s) with config: model=%r, speculative_config=None, "
                "tokenizer=%r, skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
                "override_neuron_config=None, rope_scaling=None, rope_theta=None, "
                "tokenizer_revision=None, trust_remote_code=%s, dtype=%s, max_seq_len=%d, "
                "download_dir=None, load_format=LoadFormat.AUTO, tensor_parallel_size=%d, "
                "pipeline_parallel_size=%d, disable_custom_all_reduce=%s, quantization=None, "
                "enforce_eager=%s, kv_cache_dtype=%s, seed=%d, served_model_name=%s, "
                "use_v2_block_manager=True, num_scheduler_steps=1, chunked_prefill_enabled=False, "
                "multi_step_stream_outputs=True, enable_prefix_caching=%s, "
                "use_async_output_proc=True, use_cached_outputs=True, mm_processor_kwargs=None)",
                __version__, args.model, args.tokenizer or args.model, args.trust_remote_code,
                config.get("torch_dtype", args.dtype) if args.dtype == "auto" else args.dtype,
                max_model_len, tp, pp, args.disable_custom_all_reduce, args.enforce_eager,
                args.kv_cache_dtype, args.seed, ",".join(args.served_model_name or [args.model]),
                args.enable_prefix_caching)
    gpus, visible = engine_standin.discover_gpus()
    logger.info("gpu-sim: nvidia-smi -L lists %d GPU(s); CUDA_VISIBLE_DEVICES=%s -> %d visible: %s; "
                "CPU affinity %s", len(gpus), os.environ.get("CUDA_VISIBLE_DEVICES", "(unset)"),
                len(visible), ", ".join("%d %s" % (g["index"], g["uuid"]) for g in visible) or "none",
                cpu_list_text(_cpu_affinity()) or "unknown")
    engine_standin.check_devices(args, visible)
    engine_standin.check_kv_heads(args, config)
    # the GPUs are held from model load to exit (simulator ledger, see engine_standin.claim_gpus)
    claimed = engine_standin.claim_gpus(visible, args.port)
    try:
        return _load_and_serve(args, config, max_model_len, gpus, visible, token, temp_socket, stop, holder)
    finally:
        engine_standin.release_gpus(claimed, args.port)


def _load_and_serve(args, config, max_model_len, gpus, visible, token, temp_socket, stop, holder):
    tp, pp = args.tensor_parallel_size, args.pipeline_parallel_size
    try:
        delay = float(os.environ.get("GPU_SIM_VLLM_STARTUP_DELAY", "1"))
    except ValueError:
        delay = 1.0
    if delay > 0:
        stop.wait(delay)  # simulated model load; SIGTERM ends it
    if stop.is_set():
        temp_socket.close()
        logger.info("gpu-sim: terminated during model load")
        return 0
    pynccl_standin.init_communicator(tp * pp)
    bytes_per_param = 4 if args.dtype in ("float", "float32") else 2
    weights_gb = engine_standin.estimate_params(config) * bytes_per_param / float(1 << 30) / (tp * pp)
    logger.info("Loading model weights took %.4f GB", weights_gb)
    logger.info("# GPU blocks: %d, # CPU blocks: %d", 20000, 4681)
    logger.info("Maximum concurrency for %d tokens per request: %.2fx", max_model_len,
                20000 * args.block_size / float(max_model_len))

    host = args.host or "0.0.0.0"
    handler = type("BoundStandinHandler", (StandinHandler,), {})
    server_class = StandinHTTPServer
    if ":" in host:
        server_class = type("StandinHTTPServer6", (StandinHTTPServer,), {"address_family": socket.AF_INET6})
    temp_socket.close()
    server = server_class((host, args.port), handler)
    handler.state = StandinState(args, config, max_model_len, gpus, visible, token)
    holder["server"] = server

    logger.info("Available routes are:")
    for path, methods in _ROUTES:
        logger.info("Route: %s, Methods: %s", path, methods)
    pid = os.getpid()
    uvicorn_log("Started server process [%d]" % pid)
    uvicorn_log("Waiting for application startup.")
    uvicorn_log("Application startup complete.")
    shown = "[%s]" % host if ":" in host else host
    uvicorn_log("Uvicorn running on http://%s:%d (Press CTRL+C to quit)" % (shown, args.port))

    stats_stop = threading.Event()
    if handler.state.log_stats:
        threading.Thread(target=_stats_loop, args=(handler.state, stats_stop), daemon=True).start()
    if stop.is_set():  # a signal between load and serve
        threading.Thread(target=server.shutdown, daemon=True).start()
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        stats_stop.set()
        uvicorn_log("Shutting down")
        server.server_close()
        uvicorn_log("Waiting for application shutdown.")
        uvicorn_log("Application shutdown complete.")
        uvicorn_log("Finished server process [%d]" % pid)
    return 0


def main(argv=None):
    """``python -m vllm.entrypoints.openai.api_server --model MODEL ...``"""
    from vllm.entrypoints.openai.cli_args import (FlexibleArgumentParser, make_arg_parser,
                                                  validate_parsed_serve_args)
    parser = FlexibleArgumentParser(description="vLLM OpenAI-Compatible RESTful API server.")
    parser = make_arg_parser(parser)
    args = parser.parse_args(argv)
    validate_parsed_serve_args(args)
    return run_server(args)


if __name__ == "__main__":
    sys.exit(main())
