# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""nccl-tests (``all_reduce_perf`` and the other ``*_perf``) output: parser, verdict, baseline
comparison. Pure code: no Ansible imports, no I/O.

The output, as printed by nccl-tests (src/common.cu) and seen in the real captures under
tests/fixtures/real/public/nccltests_*::

    # nccl-tests version 2.18.0 nccl-headers=22907 nccl-library=22907      (2.18+ only)
    # Collective test starting: all_reduce_perf_mpi                          (2.18+ only)
    # nThread 1 nGpus 1 minBytes 1048576 maxBytes 134217728 step: 2(factor) warmup iters: 10 ...
    # Using devices
    #  Rank  0 Group  0 Pid 2994447 on     host-a device  0 [0000:02:00] NVIDIA GeForce RTX 5090
    #                                                out-of-place                       in-place
    #       size         count      type   redop    root     time   algbw   busbw #wrong ...
         1048576        262144     float     sum      -1  4366.46    0.24    0.24       0 ...
    # Out of bounds values : 0 OK
    # Avg bus bandwidth    : 1.57614

Under ``mpirun --tag-output`` every line carries ``[job,rank]<stdout>:``; that tag is removed.
Times are microseconds, bandwidths GB/s (10^9 bytes per second), sizes bytes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

__all__ = [
    "NcclTestsParseError",
    "parse_nccl_tests",
    "problems",
    "summary",
    "compare",
    "parameter_problems",
    "command_args",
    "baseline_mismatch",
    "run_problems",
    "baseline_record",
    "stored_message",
    "compared_message",
]

_MPI_TAG = re.compile(r"^\[\d+,\d+\]<(?P<stream>stdout|stderr|stddiag)>:")
_VERSION = re.compile(r"^#\s*nccl-tests version (?P<version>\S+)(?P<rest>.*)$")
_COLLECTIVE = re.compile(r"^#\s*Collective test (?P<what>starting|concluded):\s*(?P<name>\S+)")
_NTHREAD = re.compile(r"^#\s*nThread\s+\d+")
_PARAMS = (
    ("nThread", re.compile(r"\bnThread\s+(\d+)")),
    ("nGpus", re.compile(r"\bnGpus\s+(\d+)")),
    ("minBytes", re.compile(r"\bminBytes\s+(\d+)")),
    ("maxBytes", re.compile(r"\bmaxBytes\s+(\d+)")),
    ("step", re.compile(r"\bstep:\s*(\S+)")),
    ("warmup_iters", re.compile(r"\bwarmup iters:\s*(\d+)")),
    ("iters", re.compile(r"(?<!warmup )(?<!agg )\biters:\s*(\d+)")),
    ("agg_iters", re.compile(r"\bagg iters:\s*(\d+)")),
    ("validation", re.compile(r"\bvalidation:\s*(\d+)")),
    ("graph", re.compile(r"\bgraph:\s*(\d+)")),
)
# "#  Rank  0 Group  0 Pid 2994447 on     host-a device  0 [0000:02:00] NVIDIA GeForce RTX 5090"
# (releases before 2.13 print no "Group"; older ones a bus id like [0x07]).
_RANK = re.compile(r"^#\s*Rank\s+(?P<rank>\d+)(?:\s+Group\s+(?P<group>\d+))?\s+Pid\s+(?P<pid>\d+)\s+on\s+"
                   r"(?P<host>\S+)\s+device\s+(?P<device>\d+)\s+\[(?P<bus>[^\]]*)\]\s*(?P<name>.*?)\s*$")
_OOB = re.compile(r"^#\s*Out of bounds values\s*:\s*(?P<count>\d+)\s*(?P<verdict>\S*)")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(?P<value>\S+)")
# What nccl-tests and NCCL print when a run breaks: "Test NCCL failure common.cu:1005 'unhandled
# system error'", "Test CUDA failure ...", "Test failure common.cu:401", NCCL's own "NCCL WARN".
_ERROR = re.compile(r"(Test (?:NCCL |CUDA )?failure|NCCL WARN|Segmentation fault|Aborted \(core dumped\)|"
                    r"mpirun noticed that process|exited on signal)")
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?$")


class NcclTestsParseError(ValueError):
    """The text holds no nccl-tests output at all."""


def _num(token):
    """A table cell as a number: int when integral text, float otherwise, None for N/A."""
    if token in ("N/A", "n/a"):
        return None
    if not _NUMBER.match(token):
        raise ValueError(token)
    if re.match(r"^-?\d+$", token):
        return int(token)
    return float(token)


def _row(tokens, columns):
    """One table row. ``columns``: names before the time/algbw/busbw/#wrong groups, from the
    column header (size, count, type[, redop][, root]); absent header: by token count."""
    if len(tokens) < 11:
        return None
    lead = tokens[:-8]
    groups = tokens[-8:]
    if not re.match(r"^\d+$", lead[0]) or not re.match(r"^\d+$", lead[1]):
        return None
    names = columns if columns and len(columns) == len(lead) else \
        ["size", "count", "type", "redop", "root"][:len(lead)]
    if len(names) != len(lead):
        return None
    row = {"redop": None, "root": None}
    for name, token in zip(names, lead):
        if name in ("size", "count"):
            row[name] = int(token)
        elif name == "root":
            row[name] = int(token) if re.match(r"^-?\d+$", token) else token
        else:
            row[name] = token
    try:
        values = [_num(t) for t in groups]
    except ValueError:
        return None
    for prefix, part in (("out_of_place", values[:4]), ("in_place", values[4:])):
        row[prefix] = {"time_us": part[0], "algbw": part[1], "busbw": part[2], "wrong": part[3]}
    return row


# --- one handler per kind of comment line: handler(match, result, state) ---------------------

def _on_version(match, result, state):
    result["version"] = match.group("version")
    for key, name in (("nccl-headers", "nccl_headers"), ("nccl-library", "nccl_library")):
        found = re.search(r"\b%s=(\d+)" % key, match.group("rest"))
        if found:
            result[name] = int(found.group(1))


def _on_collective(match, result, state):
    result["collective"] = match.group("name")
    if match.group("what") == "concluded":
        result["concluded"] = True


def _on_params(match, result, state):
    for name, pattern in _PARAMS:
        found = pattern.search(match.string)
        if found:
            value = found.group(1)
            result["params"][name] = int(value) if value.isdigit() else value


def _on_rank(match, result, state):
    result["devices"].append({
        "rank": int(match.group("rank")),
        "group": int(match.group("group")) if match.group("group") is not None else None,
        "pid": int(match.group("pid")), "host": match.group("host"),
        "device": int(match.group("device")), "bus_id": match.group("bus"),
        "name": match.group("name")})


def _column_header(stripped):
    """The names before ``time`` of a ``#  size  count  type ... time`` header line, else None."""
    words = stripped.lstrip("#").split()
    if words[:2] == ["size", "count"] and "time" in words:
        return words[:words.index("time")]
    return None


def _on_columns(columns, result, state):
    state["columns"] = columns


def _on_out_of_bounds(match, result, state):
    result["out_of_bounds"] = int(match.group("count"))
    result["out_of_bounds_ok"] = match.group("verdict").upper() == "OK"


def _on_average(match, result, state):
    result["complete"] = True
    try:
        result["avg_busbw"] = float(match.group("value"))
    except ValueError:
        result["errors"].append(match.string)


_COMMENT_LINES = (
    (_VERSION.match, _on_version),
    (_COLLECTIVE.match, _on_collective),
    (_NTHREAD.match, _on_params),
    (_RANK.match, _on_rank),
    (_column_header, _on_columns),
    (_OOB.match, _on_out_of_bounds),
    (_AVG.match, _on_average),
)


def _comment(stripped, result, state):
    """Hand a ``#`` line to its handler; other comments ("# Using devices", units ...) are skipped."""
    for matcher, handler in _COMMENT_LINES:
        match = matcher(stripped)
        if match:
            state["seen_marker"] = True
            handler(match, result, state)
            return


def _empty_result():
    return {
        "version": None, "nccl_headers": None, "nccl_library": None, "collective": None,
        "params": dict((name, None) for name, dummy in _PARAMS),
        "devices": [], "rows": [], "out_of_bounds": None, "out_of_bounds_ok": None,
        "avg_busbw": None, "complete": False, "concluded": False, "errors": [],
        "mpi_tagged": False, "unparsed": [],
    }


def parse_nccl_tests(text):
    """Parse the output of an nccl-tests ``*_perf`` run.

    Returns a dict: ``version`` (nccl-tests version or None), ``nccl_headers``/``nccl_library``
    (NCCL version codes where printed), ``collective`` (name where printed), ``params`` (nThread,
    nGpus, minBytes, maxBytes, step, warmup_iters, iters, agg_iters, validation, graph; each None
    when not printed), ``devices`` (one dict per ``# Rank`` line), ``rows`` (table rows in output
    order: size, count, type, redop, root, out_of_place/in_place {time_us, algbw, busbw, wrong}),
    ``out_of_bounds`` (count or None), ``out_of_bounds_ok`` (bool or None), ``avg_busbw`` (GB/s or
    None: the line is missing), ``complete`` (the ``# Avg bus bandwidth`` line was seen),
    ``concluded`` (``# Collective test concluded`` seen), ``errors`` (failure lines), ``mpi_tagged``
    (lines carried an ``mpirun --tag-output`` prefix), ``unparsed`` (other non-comment lines).

    Raises NcclTestsParseError when the text holds neither a table row nor any nccl-tests line.
    """
    result = _empty_result()
    state = {"columns": None, "seen_marker": False}
    for raw in (text or "").splitlines():
        line = raw.rstrip("\r")
        tag = _MPI_TAG.match(line)
        if tag:
            result["mpi_tagged"] = True
            line = line[tag.end():]
        stripped = line.strip()
        if not stripped:
            continue
        if _ERROR.search(stripped):
            result["errors"].append(stripped)
        elif stripped.startswith("#"):
            _comment(stripped, result, state)
        elif "NCCL INFO" not in stripped:   # NCCL_DEBUG=INFO chatter between the rows is skipped
            row = _row(stripped.split(), state["columns"])
            result["rows" if row is not None else "unparsed"].append(row if row is not None else stripped)
    if not result["rows"] and not state["seen_marker"]:
        raise NcclTestsParseError("no nccl-tests output found (no table row, no '# nThread', "
                                  "'# Avg bus bandwidth' or column header line)")
    return result


def problems(result):
    """Why a parsed run cannot serve as a measurement: a list of sentences, empty when sound.

    A run is broken when it printed failure lines, has no table rows, stopped before its
    ``# Avg bus bandwidth`` line, reports wrong results (``#wrong`` > 0) or out-of-bounds values,
    measured a bus bandwidth of 0 (a single rank per communicator, e.g. a binary built without
    MPI=1 launched by mpirun), or holds rows of several runs interleaved (a size repeats).
    """
    found = []
    if result["errors"]:
        found.append("the run printed %d failure line(s), first: %s" % (len(result["errors"]), result["errors"][0]))
    rows = result["rows"]
    if not rows:
        found.append("no result rows in the output")
    if not result["complete"]:
        found.append("output ends before '# Avg bus bandwidth' (truncated or aborted run)")
    wrong = [r["size"] for r in rows
             if any((r[p]["wrong"] or 0) > 0 for p in ("out_of_place", "in_place"))]
    if wrong:
        found.append("wrong results (#wrong > 0) at %d size(s), first %d B" % (len(wrong), wrong[0]))
    if result["out_of_bounds"]:
        found.append("%d out-of-bounds value(s)" % result["out_of_bounds"])
    if rows and all(not r[p]["busbw"] for r in rows for p in ("out_of_place", "in_place")):
        found.append("bus bandwidth is 0 in every row (one rank per communicator: nGpus/-g or "
                     "an MPI launch of a binary built without MPI=1)")
    elif result["complete"] and result["avg_busbw"] is not None and result["avg_busbw"] <= 0:
        found.append("average bus bandwidth is 0")
    sizes = [r["size"] for r in rows]
    if len(set(sizes)) != len(sizes):
        found.append("message sizes repeat (%d rows, %d sizes): output of several runs interleaved"
                     % (len(sizes), len(set(sizes))))
    return found


def summary(result):
    """The figures a baseline keeps: average bus bandwidth and the busbw at the largest size.

    ``large_message_busbw`` is the out-of-place busbw of the row with the largest message size
    (the first such row); ``large_message_size`` that size in bytes.
    """
    rows = result["rows"]
    largest = None
    for row in rows:
        if largest is None or row["size"] > largest["size"]:
            largest = row
    return {
        "avg_busbw": result["avg_busbw"],
        "large_message_size": largest["size"] if largest else None,
        "large_message_busbw": largest["out_of_place"]["busbw"] if largest else None,
        "peak_busbw": max([r[p]["busbw"] or 0 for r in rows for p in ("out_of_place", "in_place")] or [0]),
        "rows": len(rows),
        "collective": result["collective"],
        "nccl_tests_version": result["version"],
        "n_gpus": result["params"]["nGpus"],
        "devices": len(result["devices"]),
    }


def compare(baseline, current, max_drop_percent):
    """Compare a run's ``summary`` with the stored baseline's.

    Returns a list of dicts, one per figure (``avg_busbw``, ``large_message_busbw``): metric,
    baseline, current, drop_percent (positive = slower), dropped (drop > max_drop_percent).
    A figure missing on either side is reported with ``dropped`` False and drop_percent None.
    """
    out = []
    for metric in ("avg_busbw", "large_message_busbw"):
        old, new = baseline.get(metric), current.get(metric)
        if not old or new is None:
            out.append({"metric": metric, "baseline": old, "current": new, "drop_percent": None,
                        "dropped": False})
            continue
        drop = round((old - new) * 100.0 / old, 2)
        out.append({"metric": metric, "baseline": old, "current": new, "drop_percent": drop,
                    "dropped": drop > max_drop_percent})
    return out


# --- the nccl_baseline module: its parameters, the stored record and its messages ---------------

BASELINE_SCHEMA = 1


def fmt_busbw(value):
    return "n/a" if value is None else "%.2f GB/s" % value


def parameter_problems(params):
    """(problems, environment as strings) of the nccl_baseline parameters; the binary is checked
    by the module (it looks at the host)."""
    p = params
    bad = []
    if not 0 < p["max_drop_percent"] < 100:
        bad.append("max_drop_percent must be > 0 and < 100 (percent of the baseline), got %s; "
                   "e.g. 15" % p["max_drop_percent"])
    if p["gpus"] < 0:
        bad.append("gpus must be >= 1 (the -g of nccl-tests) or 0 to leave -g out, got %d" % p["gpus"])
    if p["timeout"] < 0:
        bad.append("timeout must be >= 0 seconds, got %d" % p["timeout"])
    if "-g" in p["args"] and p["gpus"]:
        bad.append("give the GPU count once: args holds -g and gpus is %d; drop -g from args" % p["gpus"])
    env = {}
    for key, value in (p["environment"] or {}).items():
        if value is None or isinstance(value, (dict, list)):
            bad.append("environment.%s must be a string, got %r" % (key, value))
        else:
            env[str(key)] = str(value)
    return bad, env


def command_args(args, gpus):
    """The benchmark's arguments: ``args`` plus ``-g gpus`` when gpus is set."""
    return list(args) + (["-g", str(gpus)] if gpus else [])


def _base(path):
    return (path or "").split("/")[-1]


def baseline_mismatch(baseline, args, binary):
    """Why a run of ``binary args`` cannot be compared with ``baseline``; None when it can."""
    if baseline.get("args") == args and _base(baseline.get("binary")) == _base(binary):
        return None
    return "was recorded with %s %s, this run would be %s %s" % (
        _base(baseline.get("binary")) or "?", " ".join(baseline.get("args") or []), _base(binary), " ".join(args))


def run_problems(parsed, rc, timeout):
    """Why a finished run is no measurement (``problems`` plus its exit status); empty when sound."""
    broken = problems(parsed)
    if rc == 124 and timeout:
        broken.insert(0, "killed after the timeout of %d s" % timeout)
    elif rc != 0:
        broken.insert(0, "exit status %d" % rc)
    return broken


def baseline_record(host, binary, args, env, elapsed, parsed, recorded):
    """The stored baseline: what ran, where, when (``recorded``, UTC ISO 8601) and its figures."""
    return {
        "schema": BASELINE_SCHEMA,
        "host": host,
        "recorded": recorded,
        "binary": binary,
        "args": args,
        "environment": dict((k, v) for k, v in env.items() if k != "LC_ALL"),
        "elapsed_s": elapsed,
        "summary": summary(parsed),
        "devices": parsed["devices"],
        "rows": [{"size": r["size"], "busbw_out_of_place": r["out_of_place"]["busbw"],
                  "busbw_in_place": r["in_place"]["busbw"]} for r in parsed["rows"]],
    }


def stored_message(host, binary, path, figures):
    return "%s: %s stored as baseline in %s: avg busbw %s, busbw at %d B %s" % (
        host, _base(binary), path, fmt_busbw(figures["avg_busbw"]), figures["large_message_size"] or 0,
        fmt_busbw(figures["large_message_busbw"]))


def compared_message(host, binary, findings, figures, max_drop_percent, baseline, path):
    """The one-line verdict of a comparison (``findings`` from ``compare``)."""
    names = {"avg_busbw": "avg busbw", "large_message_busbw": "busbw at %s B" % figures["large_message_size"]}
    dropped = [f for f in findings if f["dropped"]]
    if dropped:
        return "%s: %s bandwidth drop: %s (limit %g%%, baseline of %s in %s)" % (
            host, _base(binary),
            "; ".join("%s %s is %.1f%% below the baseline %s"
                      % (names[f["metric"]], fmt_busbw(f["current"]), f["drop_percent"], fmt_busbw(f["baseline"]))
                      for f in dropped),
            max_drop_percent, baseline.get("recorded", "?"), path)
    return "%s: %s within %g%% of the baseline: %s" % (
        host, _base(binary), max_drop_percent,
        "; ".join("%s %s (baseline %s)" % (names[f["metric"]], fmt_busbw(f["current"]), fmt_busbw(f["baseline"]))
                  for f in findings))
