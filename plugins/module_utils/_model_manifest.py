# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Model manifests: what a staged model directory must hold, and the check that it does.

Pure code: no Ansible imports. It does no I/O of its own either: the caller hands in a listing
of the directory (``{relative name: {"size": bytes, "mtime_ns": int, "regular": bool}}``) and
a function that opens one of its files for binary reading; files are hashed from that stream in
chunks, so a 5 GB shard never sits in memory.

A manifest (``manifest.json`` beside the weights) is::

    {"manifest_version": 1, "repo_id": "Qwen/Qwen2.5-7B-Instruct", "revision": "<40 hex>",
     "format": "safetensors",
     "files": {"config.json": {"size": 663, "algorithm": "git-blob-sha1", "checksum": "<40 hex>",
                               "provenance": "hub-git-blob-id"},
               "model-00001-of-00004.safetensors": {"size": 3945441440, "algorithm": "sha256",
                               "checksum": "<64 hex>", "provenance": "hub-lfs-sha256"}},
     "excluded": ["pytorch_model.bin"],          # the hub has them; another format, not staged
     "config": {... the hub's config.json ...},  # recorded once verified
     "verified": {"config.json": {"size": 663, "mtime_ns": ..., "checksum": "<40 hex>"}}}

Checksums come from the hub's answer to ``GET /api/models/{repo}/revision/{rev}?blobs=true``:
files stored in git LFS (weights) carry the LFS object's ``sha256``; the others carry the git
blob id, ``sha1(b"blob <size>\\0" + content)``. An explicitly allowed conversion (e.g. a GGUF
build) is accepted only with its own sha256 list, recorded with provenance ``conversion``.

Findings have the shape of the compliance checks: ``{id, severity (fail|warn|info), host,
file, expected, actual, remediation}``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import posixpath
import re

MANIFEST_NAME = "manifest.json"
MANIFEST_VERSION = 1
CHUNK_SIZE = 8 * 1024 * 1024

ALGO_SHA256 = "sha256"
ALGO_GIT_BLOB = "git-blob-sha1"
PROVENANCE_LFS = "hub-lfs-sha256"
PROVENANCE_BLOB = "hub-git-blob-id"
PROVENANCE_CONVERSION = "conversion"

#: Weight file suffix -> format name. A weight file of another format than the manifest's is a
#: failure: vLLM would load it, or a third-party conversion slipped in.
WEIGHT_FORMATS = {
    ".safetensors": "safetensors",
    ".gguf": "gguf",
    ".bin": "pytorch",
    ".pt": "pytorch",
    ".pth": "pytorch",
}
FORMATS = ("safetensors", "gguf", "pytorch")

#: config.json keys the layout planner reads: a difference between the controller copy
#: (vllm_server_model.config) and the hub's is a failure; other keys only warn.
PLANNER_CONFIG_KEYS = (
    "architectures", "hidden_size", "intermediate_size", "num_hidden_layers",
    "num_attention_heads", "num_key_value_heads", "vocab_size", "max_position_embeddings",
    "tie_word_embeddings", "torch_dtype", "head_dim",
)

_COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
_REPO_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


class ManifestError(ValueError):
    """The manifest or the hub's answer cannot be used; the message says why and what to do."""


def is_commit(revision):
    return isinstance(revision, str) and bool(_COMMIT_RE.match(revision))


def byte_size(value):
    """``value`` as a size in bytes (an int >= 0, or a string of digits); None when it is none."""
    if isinstance(value, str) and value.isdigit():
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def is_repo_id(repo_id):
    return isinstance(repo_id, str) and bool(_REPO_RE.match(repo_id)) and ".." not in repo_id


def weight_format(name):
    """Format of a weight file by its suffix, or None for a file that holds no weights."""
    for suffix, fmt in WEIGHT_FORMATS.items():
        if name.endswith(suffix):
            return fmt
    return None


def safe_relpath(name):
    """True when ``name`` is a relative path that stays inside the model directory."""
    if not isinstance(name, str) or not name or name.startswith("/") or "\\" in name:
        return False
    norm = posixpath.normpath(name)
    return norm == name and not norm.startswith("../") and norm not in (".", "..") and "\x00" not in name


# --- hashing -------------------------------------------------------------------------------------

def sha256_stream(stream, chunk_size=CHUNK_SIZE):
    """Hex sha256 of a binary stream, read in chunks."""
    digest = hashlib.sha256()
    while True:
        block = stream.read(chunk_size)
        if not block:
            break
        digest.update(block)
    return digest.hexdigest()


def git_blob_id_stream(stream, size, chunk_size=CHUNK_SIZE):
    """git's blob id of a file of ``size`` bytes: sha1 of ``b"blob <size>\\0"`` + content.

    Returns None when the stream holds a different number of bytes than ``size`` (the header
    would then be wrong, so the id could not match anyway)."""
    digest = hashlib.sha1(("blob %d\0" % size).encode("ascii"))  # nosec - git's object id, not security
    read = 0
    while True:
        block = stream.read(chunk_size)
        if not block:
            break
        read += len(block)
        digest.update(block)
    return digest.hexdigest() if read == size else None


def checksum_stream(stream, algorithm, size, chunk_size=CHUNK_SIZE):
    if algorithm == ALGO_SHA256:
        return sha256_stream(stream, chunk_size)
    if algorithm == ALGO_GIT_BLOB:
        return git_blob_id_stream(stream, size, chunk_size)
    raise ManifestError("unknown checksum algorithm %r (known: %s, %s)" % (algorithm, ALGO_SHA256, ALGO_GIT_BLOB))


# --- building a manifest -------------------------------------------------------------------------

def _conversion_files(conversions):
    """{name: entry} of explicitly allowed conversions; each file must carry size and sha256."""
    files = {}
    for conv in conversions or []:
        if not isinstance(conv, dict):
            raise ManifestError("a conversion must be a dict {format, source, files: [{name, size, sha256}]}, got %r" % (conv,))
        fmt = conv.get("format")
        if fmt not in FORMATS:
            raise ManifestError("conversion format %r is not one of %s" % (fmt, ", ".join(FORMATS)))
        listed = conv.get("files") or []
        if not isinstance(listed, list):
            raise ManifestError("conversions: files of the conversion to %s is %r: give a list of {name, size, sha256}"
                                % (fmt, listed))
        if not listed:
            raise ManifestError(
                "conversion to %s (source %r) carries no checksum list: an allowed conversion must list "
                "every file with its size and sha256" % (fmt, conv.get("source", "")))
        for item in listed:
            name = item.get("name") if isinstance(item, dict) else None
            sha = str(item.get("sha256", "")).lower() if isinstance(item, dict) else ""
            size = item.get("size") if isinstance(item, dict) else None
            if not safe_relpath(name):
                raise ManifestError("conversion file name %r is not a relative path inside the model directory" % (name,))
            if not _SHA256_RE.match(sha):
                raise ManifestError(
                    "conversion file %s has no valid sha256 (%r): an allowed conversion must carry its own "
                    "checksum list (64 hex digits per file)" % (name, item.get("sha256") if isinstance(item, dict) else None))
            if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                raise ManifestError("conversion file %s has no valid size in bytes (%r)" % (name, size))
            files[name] = {"size": size, "algorithm": ALGO_SHA256, "checksum": sha,
                           "provenance": PROVENANCE_CONVERSION, "format": fmt,
                           "source": str(conv.get("source", ""))}
    return files


def _hub_entry(sib, index, name, repo_id, revision):
    """The manifest entry of sibling ``index`` of the hub's answer (its LFS sha256, else its git
    blob id, with its size); ManifestError names the sibling and the value when it has neither."""
    lfs = sib.get("lfs")
    size = sib.get("size")
    if isinstance(lfs, dict) and lfs.get("sha256"):
        sha = str(lfs["sha256"]).lower()
        if not _SHA256_RE.match(sha):
            raise ManifestError("the hub's LFS sha256 of %s is not 64 hex digits: %r" % (name, lfs["sha256"]))
        size, where = lfs.get("size", size), "lfs.size"
        entry = {"algorithm": ALGO_SHA256, "checksum": sha, "provenance": PROVENANCE_LFS}
    elif sib.get("blobId") and size is not None:
        blob = str(sib["blobId"]).lower()
        if not _COMMIT_RE.match(blob):
            raise ManifestError("the hub's blob id of %s is not 40 hex digits: %r" % (name, sib["blobId"]))
        where, entry = "size", {"algorithm": ALGO_GIT_BLOB, "checksum": blob, "provenance": PROVENANCE_BLOB}
    else:
        raise ManifestError(
            "the hub answer for %s@%s has no size/checksum for %s: ask for file metadata "
            "(GET /api/models/%s/revision/%s?blobs=true)" % (repo_id, revision, name, repo_id, revision))
    entry["size"] = byte_size(size)
    if entry["size"] is None:
        raise ManifestError("hub_info siblings[%d] (%s): %s is %r, not a size in bytes; is hub_info the hub's "
                            "answer of /api/models/%s/revision/%s?blobs=true (or a mirror's copy of it)?"
                            % (index, name, where, size, repo_id, revision))
    return entry


def manifest_from_hub(info, repo_id, revision, fmt="safetensors", conversions=None):
    """Build a manifest from the hub's revision answer (``?blobs=true``).

    Raises ManifestError when the answer is of another revision, lacks per-file metadata, or
    names a file outside the model directory."""
    if fmt not in FORMATS:
        raise ManifestError("format %r is not one of %s" % (fmt, ", ".join(FORMATS)))
    if not isinstance(info, dict) or not isinstance(info.get("siblings"), list):
        raise ManifestError("the hub answer for %s@%s has no 'siblings' list (is it the answer of "
                            "/api/models/<repo>/revision/<commit>?blobs=true?)" % (repo_id, revision))
    files = {}
    excluded = []
    for index, sib in enumerate(info["siblings"]):
        name = sib.get("rfilename") if isinstance(sib, dict) else None
        if not safe_relpath(name) or name == MANIFEST_NAME:
            raise ManifestError("the hub answer for %s@%s names a file %r outside the model directory "
                                "(or the reserved %s); refusing it" % (repo_id, revision, name, MANIFEST_NAME))
        wfmt = weight_format(name)
        if wfmt is not None and wfmt != fmt:
            excluded.append(name)
            continue
        files[name] = _hub_entry(sib, index, name, repo_id, revision)
    for name, entry in _conversion_files(conversions).items():
        if name in files:
            raise ManifestError("conversion file %s is also a file of the hub revision; give it another name" % name)
        files[name] = entry
        if name in excluded:
            excluded.remove(name)
    return {
        "manifest_version": MANIFEST_VERSION,
        "repo_id": repo_id,
        "revision": str(info.get("sha") or ""),
        "format": fmt,
        "files": files,
        "excluded": sorted(excluded),
    }


def load_manifest(text):
    """Parse manifest.json text; ManifestError with the reason when it is not a usable manifest."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ManifestError("manifest.json is not valid JSON (%s)" % exc)
    if not isinstance(data, dict) or data.get("manifest_version") != MANIFEST_VERSION:
        raise ManifestError("manifest.json is not a version %d manifest" % MANIFEST_VERSION)
    if not isinstance(data.get("files"), dict) or not data["files"]:
        raise ManifestError("manifest.json lists no files")
    for name, entry in data["files"].items():
        if not safe_relpath(name) or not isinstance(entry, dict):
            raise ManifestError("manifest.json names %r, not a relative path inside the model directory" % (name,))
        if entry.get("algorithm") not in (ALGO_SHA256, ALGO_GIT_BLOB) or not isinstance(entry.get("checksum"), str) \
                or not entry["checksum"] or byte_size(entry.get("size")) != entry.get("size"):
            raise ManifestError("manifest.json entry %s lacks size, algorithm or checksum" % name)
    if data.get("format", "safetensors") not in FORMATS:
        raise ManifestError("manifest.json format is %r, not one of %s" % (data.get("format"), ", ".join(FORMATS)))
    verified = data.get("verified") or {}
    if not isinstance(verified, dict) or not all(isinstance(v, dict) for v in verified.values()):
        raise ManifestError("manifest.json 'verified' is %s, not a record {file: {size, mtime_ns, checksum}}; "
                            "remove the file and verify again" % _short(verified))
    return data


def _short(value, limit=120):
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def dump_manifest(manifest):
    return json.dumps(manifest, indent=2, sort_keys=True) + "\n"


def same_plan(a, b):
    """True when two manifests ask for the same files (ignores recorded state and config)."""
    keys = ("repo_id", "revision", "format", "files")
    return all((a or {}).get(k) == (b or {}).get(k) for k in keys)


# --- verification --------------------------------------------------------------------------------

def _finding(fid, severity, host, name, expected, actual, remediation):
    return {"id": fid, "severity": severity, "host": host, "file": name,
            "expected": expected, "actual": actual, "remediation": remediation}


def _listing_problem(name, entry, have, host, where):
    """A manifest file missing, not regular or of another size: ``(finding, fetch reason)``;
    ``(None, None)`` when its size matches (the content is checked next)."""
    if have is None:
        return _finding("model-file-missing", "fail", host, name, "%d bytes" % entry["size"], "missing",
                        "fetch %s of %s again (re-run model_store)" % (name, where)), "missing"
    if not have.get("regular", True):
        return _finding("model-file-not-regular", "fail", host, name, "regular file", "not a regular file",
                        "replace %s with the file itself (re-run model_store)" % name), "not-regular"
    if have["size"] != entry["size"]:
        # Size first: an obvious truncation costs no hashing.
        short = have["size"] < entry["size"]
        what = "truncated" if short else "of another size"
        return _finding("model-file-truncated" if short else "model-file-size-mismatch", "fail", host, name,
                        "%d bytes" % entry["size"], "%d bytes" % have["size"],
                        "%s is %s: fetch it again (re-run model_store)" % (name, what)), \
            "truncated" if short else "size"
    return None, None


def _content_problem(name, entry, have, rec, open_file, chunk_size, host, report):
    """Trust an unchanged file verified before, else hash it (recorded in ``report``): a
    ``(finding, "corrupted")`` when the checksum differs, else ``(None, None)``."""
    if rec.get("size") == have["size"] and rec.get("mtime_ns") == have.get("mtime_ns") \
            and rec.get("checksum") == entry["checksum"]:
        report["trusted"].append(name)
        report["verified"][name] = rec
        return None, None
    stream = open_file(name)
    try:
        actual = checksum_stream(stream, entry["algorithm"], entry["size"], chunk_size)
    finally:
        stream.close()
    report["hashed"].append(name)
    report["hashed_bytes"] += entry["size"]
    if actual != entry["checksum"]:
        return _finding(
            "model-file-corrupted", "fail", host, name,
            "%s %s (%s)" % (entry["algorithm"], entry["checksum"], entry.get("provenance", "")),
            "%s %s" % (entry["algorithm"], actual),
            "%s does not match its published checksum: fetch it again; if it keeps failing, the source "
            "(mirror) holds a damaged or altered copy" % name), "corrupted"
    report["verified"][name] = {"size": have["size"], "mtime_ns": have.get("mtime_ns"), "checksum": entry["checksum"]}
    return None, None


def _extra_file_finding(name, fmt, host, where):
    """A file the manifest does not list: another weight format and unlisted weights fail, the rest warns."""
    wfmt = weight_format(name)
    if wfmt is not None and wfmt != fmt:
        return _finding(
            "model-format", "fail", host, name, "%s weights only" % fmt, "%s file %s" % (wfmt, name),
            "%s is a %s file in a %s model: remove it, or allow the conversion explicitly with its own "
            "checksum list (conversions in model_store_models)" % (name, wfmt, fmt))
    if wfmt is not None:
        return _finding(
            "model-file-extra", "fail", host, name, "not present (not in the manifest)", "present",
            "%s is a weight file the manifest does not list; vLLM would load it: remove it" % name)
    return _finding(
        "model-file-extra", "warn", host, name, "not present (not in the manifest)", "present",
        "remove %s, or leave it if it is yours (it is not part of %s)" % (name, where))


def verify(manifest, listing, open_file, host="", expected_revision=None, recorded=None,
           chunk_size=CHUNK_SIZE):
    """Check a directory listing against a manifest.

    ``listing``: {relative name: {"size", "mtime_ns", "regular"}} of every entry under the model
    directory except manifest.json. ``open_file(name)`` opens one for binary reading.
    ``recorded``: {name: {"size", "mtime_ns", "checksum"}} of files verified before; a file whose
    size, mtime and expected checksum are unchanged is not hashed again.

    Returns ``(findings, report)``: report = {"hashed": [...], "trusted": [...], "verified":
    {name: {size, mtime_ns, checksum}}, "to_fetch": [{"file", "size", "reason"}]}.
    """
    findings = []
    recorded = recorded or {}
    report = {"hashed": [], "hashed_bytes": 0, "trusted": [], "verified": {}, "to_fetch": []}
    files = manifest.get("files") or {}
    where = "%s@%s" % (manifest.get("repo_id", ""), manifest.get("revision", ""))

    if expected_revision and manifest.get("revision") != expected_revision:
        findings.append(_finding(
            "model-revision-mismatch", "fail", host, None, expected_revision, manifest.get("revision"),
            "the copy is of revision %s, not the pinned %s: stage the pinned revision (or fix the pin "
            "in model_store_models)" % (manifest.get("revision"), expected_revision)))
    for name in sorted(files):
        entry, have = files[name], listing.get(name)
        problem, reason = _listing_problem(name, entry, have, host, where)
        if problem is None:
            problem, reason = _content_problem(name, entry, have, recorded.get(name) or {}, open_file,
                                               chunk_size, host, report)
        if problem is not None:
            findings.append(problem)
            report["to_fetch"].append({"file": name, "size": entry["size"], "reason": reason})
    fmt = manifest.get("format", "safetensors")
    findings += [_extra_file_finding(name, fmt, host, where) for name in sorted(set(listing) - set(files))]
    return findings, report


def parse_config(text, host="", name="config.json"):
    """(config dict or None, findings) of a config.json's text."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        data = exc
    if isinstance(data, dict):
        return data, []
    actual = "invalid JSON: %s" % data if isinstance(data, ValueError) else "JSON %s, not an object" % type(data).__name__
    return None, [_finding(
        "model-config-unparseable", "fail", host, name, "a JSON object", actual,
        "%s cannot be read by vLLM: fetch it again from the pinned revision" % name)]


def compare_configs(controller, staged, host="", name="config.json"):
    """Findings where the controller-side config.json (vllm_server_model.config, which the
    planner used) and the hub's/staged one disagree. Planner keys fail, other keys warn."""
    findings = []
    controller = controller or {}
    staged = staged or {}
    for key in sorted(set(controller) | set(staged)):
        mine = controller.get(key, "<absent>")
        theirs = staged.get(key, "<absent>")
        if mine == theirs:
            continue
        planner = key in PLANNER_CONFIG_KEYS
        findings.append(_finding(
            "model-config-mismatch", "fail" if planner else "warn", host, name,
            "%s = %s (hub/staged copy)" % (key, json.dumps(theirs)),
            "%s = %s (controller copy)" % (key, json.dumps(mine)),
            ("the layout was planned from a config.json that differs from the model's own in %s: replace the "
             "controller copy (vllm_server_model.config) with the staged %s" % (key, name)) if planner else
            ("the controller copy of %s differs in %s (not used by the planner); refresh it from the staged "
             "copy" % (name, key))))
    return findings


def summarize(findings):
    out = {"fail": 0, "warn": 0, "info": 0}
    for item in findings:
        out[item["severity"]] = out.get(item["severity"], 0) + 1
    return out


def revision_findings(pinned, hub_revision, on_disk_revision, host=""):
    """Findings when the source answered another revision than the pin, or the directory's
    own manifest.json records another revision (a copy of some other commit)."""
    findings = []
    if pinned and hub_revision and hub_revision != pinned:
        findings.append(_finding(
            "model-revision-mismatch", "fail", host, None, pinned, hub_revision,
            "the source answered revision %s for the pin %s: point the source at the pinned commit "
            "(a mirror must hold <repo_id>/<revision>/model-info.json of that commit)" % (hub_revision, pinned)))
    if pinned and on_disk_revision and on_disk_revision != pinned:
        findings.append(_finding(
            "model-revision-mismatch", "fail", host, MANIFEST_NAME, pinned, on_disk_revision,
            "the directory holds revision %s, not the pinned %s: stage the pinned revision with "
            "model_store" % (on_disk_revision, pinned)))
    return findings


# --- the model_verify module: its parameters, the manifest to verify against, the result ------

def parameter_problem(revision, hub_info, repo_id, chunk_size, host):
    """The first thing wrong with model_verify's parameters, as its message; None when sound."""
    if revision and not is_commit(revision):
        return ("model_verify on %s: revision %r is not a full 40-digit commit hash; pin the "
                "commit (the hub shows it as 'sha' of the revision)" % (host, revision))
    if hub_info is not None and not (repo_id and revision):
        return "model_verify on %s: hub_info needs repo_id and revision" % host
    if repo_id is not None and not is_repo_id(repo_id):
        return ("model_verify on %s: repo_id %r is not a model repository id such as Qwen/Qwen2.5-7B-Instruct"
                % (host, repo_id))
    if chunk_size < 4096:
        return "model_verify on %s: chunk_size %d is too small; use at least 4096" % (host, chunk_size)
    return None


def expected_manifest(hub_info, repo_id, revision, fmt, conversions, on_disk, host=""):
    """What to verify against: ``(manifest, recorded, findings)`` from the hub's answer (the copy's
    own manifest.json then only lends its recorded checksums when it plans the same files), else
    from the copy's manifest.json; None when there is neither. Raises ManifestError."""
    if hub_info is not None:
        manifest = manifest_from_hub(hub_info, repo_id, revision, fmt, conversions)
        findings = revision_findings(revision, manifest["revision"], on_disk.get("revision") if on_disk else None,
                                     host)
        recorded = on_disk.get("verified") if on_disk and same_plan(on_disk, manifest) else {}
        return manifest, recorded, findings
    if on_disk is not None:
        manifest = dict(on_disk)
        return manifest, on_disk.get("verified") or {}, revision_findings(revision, None, manifest.get("revision"), host)
    return None


def updated_manifest(manifest, report, config):
    """The manifest to record: ``manifest`` with this run's verified files and the copy's config."""
    new = dict(manifest)
    new.pop("verified", None)
    new.pop("config", None)
    new["verified"] = report["verified"]
    if config is not None:
        new["config"] = config
    return new


def verify_summary(counts, manifest, report):
    """Counts per severity plus the manifest's size and what this run hashed and trusted."""
    out = dict(counts)
    out.update({
        "files": len(manifest["files"]),
        "bytes": sum(e["size"] for e in manifest["files"].values()),
        "hashed": len(report["hashed"]),
        "hashed_bytes": report["hashed_bytes"],
        "trusted": len(report["trusted"]),
    })
    return out
