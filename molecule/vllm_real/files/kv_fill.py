# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""TEST ONLY (molecule/vllm_real): fill one real vLLM instance's KV cache and let the collector see it.

Sends --requests long completions at once to the instance's own port (distinct random token ids as
the prompt, so prefix caching shares nothing; ignore_eos, so each runs to --max-tokens), and while
they run starts the collector by hand (--collect, an argv) and reads its textfile until the
instance's gpu_fleet_vllm_gpu_cache_usage_perc reaches --level. Then it stops running the collector:
the textfile keeps the high value for Prometheus until the next run. Prints one JSON summary.
"""
import argparse
import json
import random
import subprocess
import threading
import time
import urllib.request


def _complete(url, model, tokens, max_tokens, out):
    body = json.dumps({"model": model, "prompt": tokens, "max_tokens": max_tokens, "ignore_eos": True,
                       "temperature": 1.0}).encode()
    req = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=600) as answer:
            usage = json.loads(answer.read().decode())["usage"]
            out.append({"status": answer.status, "usage": usage})
    except Exception as exc:  # pylint: disable=broad-except
        out.append({"status": 0, "error": str(exc)})


def _usage(textfile, instance):
    try:
        with open(textfile) as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    needle = 'vllm_instance="%s"' % instance
    for line in lines:
        if line.startswith("gpu_fleet_vllm_gpu_cache_usage_perc{") and needle in line:
            return float(line.rsplit(" ", 1)[1])
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--instance", required=True)
    parser.add_argument("--vocab", type=int, required=True)
    parser.add_argument("--requests", type=int, default=2)
    parser.add_argument("--prompt-tokens", type=int, required=True)
    parser.add_argument("--max-tokens", type=int, required=True)
    parser.add_argument("--textfile", required=True)
    parser.add_argument("--level", type=float, default=0.75)
    parser.add_argument("--collect", nargs="+", required=True)
    args = parser.parse_args()
    url = "http://127.0.0.1:%d/v1/completions" % args.port
    results, threads = [], []
    for _n in range(args.requests):
        tokens = [random.randrange(100, args.vocab) for _t in range(args.prompt_tokens)]
        thread = threading.Thread(target=_complete, args=(url, args.model, tokens, args.max_tokens, results))
        thread.start()
        threads.append(thread)
    seen, runs, started = [], 0, time.time()
    while any(t.is_alive() for t in threads):
        subprocess.run(args.collect, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        runs += 1
        value = _usage(args.textfile, args.instance)
        seen.append(value)
        if value is not None and value >= args.level:
            break
    for thread in threads:
        thread.join()
    print(json.dumps({"collector_runs": runs, "usage_seen": seen, "peak": max([v for v in seen if v is not None],
                                                                              default=None),
                      "requests": results, "seconds": round(time.time() - started, 1)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
