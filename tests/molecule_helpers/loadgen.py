# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A bounded load generator for the molecule scenarios (test-only; standard library only).

Runs on the simulated host against the endpoint: CLIENTS threads send completions back to back
(every other client streams) until the file STOP exists, then writes a JSON summary to OUT:
requests sent, ok, failed (with the reason of each failure) and the first and last failure time.
A request fails on a non-2xx answer, a reset or a timeout; a stream also fails when it ends
without ``data: [DONE]``.

usage: loadgen.py --url URL --model NAME --stop FILE --out FILE [--clients N] [--api-key KEY]
                  [--pause SECONDS] [--max-tokens N] [--timeout SECONDS]
"""
import argparse
import http.client
import json
import os
import threading
import time
import urllib.parse


def one_request(url, args, stream):
    """None when the request succeeded, else the reason it failed."""
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=args.timeout)
    body = json.dumps({"model": args.model, "prompt": "hello from the load generator", "max_tokens": args.max_tokens,
                       "stream": stream})
    headers = {"Content-Type": "application/json"}
    if args.api_key:
        headers["Authorization"] = "Bearer " + args.api_key
    try:
        conn.request("POST", parts.path or "/v1/completions", body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        if not 200 <= resp.status < 300:
            return "HTTP %d %s" % (resp.status, data[:200].decode("utf-8", "replace").strip())
        if stream and b"data: [DONE]" not in data:
            return "stream ended without data: [DONE] (%d bytes)" % len(data)
        return None
    except (OSError, http.client.HTTPException) as exc:
        return "%s: %s" % (type(exc).__name__, exc)
    finally:
        conn.close()


def client(index, args, totals, lock):
    stream = index % 2 == 1
    while not os.path.exists(args.stop):
        started = time.time()
        problem = one_request(args.url, args, stream)
        with lock:
            totals["sent"] += 1
            totals["streamed" if stream else "plain"] += 1
            if problem is None:
                totals["ok"] += 1
            else:
                totals["failed"] += 1
                totals["failures"].append({"at": round(started, 3), "stream": stream, "reason": problem})
        if args.pause:
            time.sleep(args.pause)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--stop", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--api-key", default="")
    parser.add_argument("--pause", type=float, default=0.0)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    totals = {"sent": 0, "ok": 0, "failed": 0, "streamed": 0, "plain": 0, "failures": [],
              "clients": args.clients, "started": round(time.time(), 3)}
    lock = threading.Lock()
    threads = [threading.Thread(target=client, args=(i, args, totals, lock), daemon=True) for i in range(args.clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    totals["stopped"] = round(time.time(), 3)
    tmp = args.out + ".tmp"
    with open(tmp, "w") as handle:
        json.dump(totals, handle, indent=2, sort_keys=True)
    os.rename(tmp, args.out)


if __name__ == "__main__":
    main()
