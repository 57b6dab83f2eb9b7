#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: model_fetch
short_description: GET a file or an answer from a model hub with a token that never follows a redirect to another host
version_added: 0.1.0
description:
  - "Sends one C(GET) with C(Authorization: Bearer <token>) and follows redirects itself, hop by
    hop. The token goes only to the scheme, host and port of O(url); once a redirect leaves that
    origin (the Hugging Face hub answers every LFS download with a 302 to its CDN host) the rest
    of the chain is asked without it. C(ansible.builtin.uri) and C(ansible.builtin.get_url) send
    every header to every host a redirect names."
  - An https URL that redirects to http is refused, as are redirects to other schemes, to a URL
    with user credentials, and more than O(max_redirects) hops. A token is never sent over http.
  - With O(dest), streams the body into a temporary file beside O(dest), checks O(sha256) when
    given, sets O(mode), O(owner) and O(group), and renames it over O(dest); a failed or
    mismatching download leaves O(dest) as it was. Without O(dest), returns the body
    (RV(content), and RV(json) when it parses), e.g. the hub's revision API answer.
author:
  - gpu_fleet maintainers (@gpu-fleet)
options:
  url:
    description: The http(s) URL to GET, e.g. C(https://huggingface.co/<repo>/resolve/<commit>/<file>).
    type: str
    required: true
  dest:
    description:
      - File to write the body to (its directory must exist). Without it the body is returned.
    type: path
  token:
    description:
      - Bearer token for O(url)'s origin only. Refused with a plain http O(url) and when it holds
        whitespace, a line break or a non-printable character. Never logged or returned.
    type: str
  sha256:
    description:
      - Expected sha256 of the body (64 hex digits), e.g. a git LFS file's C(lfs.sha256) in the
        hub's answer. A download that differs is deleted and the task fails; an O(dest) that
        already matches is not fetched again.
    type: str
  force:
    description:
      - Fetch even when O(dest) exists (without O(sha256), an existing O(dest) is otherwise kept).
    type: bool
    default: false
  ca_path:
    description:
      - PEM file of the CA certificates to trust instead of the system's (a private hub's CA).
        Every hop is verified against it, so it must also hold the CDN's CA if that differs.
    type: path
  timeout:
    description: Seconds to wait for a connection and for each read of the answer.
    type: int
    default: 60
  max_redirects:
    description: Redirects followed at most; one more fails the task.
    type: int
    default: 5
  max_content_bytes:
    description: Without O(dest), the largest answer accepted, in bytes.
    type: int
    default: 67108864
  host:
    description: Host name put into the messages (the inventory name).
    type: str
    default: ""
extends_documentation_fragment:
  - ansible.builtin.files
notes:
  - Supports check mode. With O(dest) it then sends nothing and reports whether O(dest) would
    change; without O(dest) the C(GET) is made (it changes nothing) and its answer returned.
  - A file written without O(mode) is C(0600), the temporary file's mode.
  - The redirect rules are in C(plugins/module_utils/_redirects.py) (those of requests and curl,
    stricter). Proxies from the environment are used; C(~/.netrc) is not.
seealso:
  - module: ansible.builtin.get_url
  - name: The hub's download redirects
    description: LFS files are served by a CDN host after a 302 from the hub.
    link: https://huggingface.co/docs/hub/api
"""

EXAMPLES = r"""
- name: Download one LFS file of a gated model; the CDN never sees the token
  gpu_fleet.vllm_serving.model_fetch:
    url: https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct/resolve/0e9e39f249a16976918f6564b8830bc894c89659/model-00001-of-00004.safetensors
    dest: /srv/models/.model_store/Llama-3.1-8B-Instruct/.staging-0e9e39f249a16976918f6564b8830bc894c89659/model-00001-of-00004.safetensors
    token: "{{ vault_hf_token }}"
    sha256: 2b1879f356aed350030bb40eb45ad362c89d9891096f79a3ab323d3ba5607668
    owner: root
    group: root
    mode: "0600"
    timeout: 1800

- name: Read a revision's file list from a private hub with its own CA
  gpu_fleet.vllm_serving.model_fetch:
    url: https://hub.example.internal/api/models/Qwen/Qwen2.5-7B-Instruct/revision/a09a35458c702b33eeacc393d103063234e8bc28?blobs=true
    token: "{{ vault_hf_token }}"
    ca_path: /etc/ssl/private-hub-ca.pem
  register: revision_answer
"""

RETURN = r"""
status:
  description: HTTP status of the last answer; -1 when none came (connection, TLS, timeout) or nothing was sent.
  returned: always
  type: int
  sample: 200
url:
  description: The O(url) asked for.
  returned: always
  type: str
redirects:
  description:
    - Every hop asked, in order, with its answer and whether the token was sent to it. URLs are
      shown without query and user info (a CDN's signed query is a credential of its own).
  returned: always
  type: list
  elements: dict
  sample:
    - {url: "https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct/resolve/7ae5.../model.safetensors", status: 302, authorization: true}
    - {url: "https://cas-bridge.xethub.hf.co/xet-bridge-us/6655.../8f1a...", status: 200, authorization: false}
dest:
  description: The O(dest) written or checked.
  returned: with O(dest)
  type: str
sha256:
  description: sha256 of the body written, or of O(dest) when it was already right.
  returned: with O(dest), when a body was read or O(dest) was hashed
  type: str
size:
  description: Bytes of the body.
  returned: when a body was read
  type: int
content:
  description: The body, decoded as UTF-8.
  returned: without O(dest), on success
  type: str
json:
  description: The body parsed as JSON.
  returned: without O(dest), when the body is JSON
  type: raw
reason:
  description: Why the request failed, short (the HTTP reason phrase or the error), for a caller's own message.
  returned: on failure
  type: str
"""

import hashlib
import json
import os
import tempfile

from http.client import HTTPException
from urllib.error import HTTPError, URLError

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _redirects as rd

AGENT = "gpu_fleet-model_fetch/1"
CHUNK = 1024 * 1024


class FetchError(Exception):
    """A request that failed: ``status`` (-1 for no answer), a short ``reason`` and the ``what``
    of the message."""

    def __init__(self, status, reason, what=None):
        super(FetchError, self).__init__(reason)
        self.status = status
        self.reason = reason
        self.what = what or ("answered %s" % reason if status > 0 else "failed: %s" % reason)


def _reason(exc):
    if isinstance(exc, URLError) and not isinstance(exc, HTTPError):
        exc = exc.reason
    text = str(exc) or exc.__class__.__name__
    if "CERTIFICATE_VERIFY_FAILED" in text:
        text += " (a private hub's CA: give its PEM file in ca_path)"
    return text


def _get(url, p, auth):
    headers = {"Authorization": "Bearer %s" % p["token"]} if auth else {}
    return open_url(url, method="GET", headers=headers, follow_redirects="none", timeout=p["timeout"],
                    validate_certs=True, ca_path=p["ca_path"], use_netrc=False, decompress=False,
                    http_agent=AGENT)


def open_chain(p, hops):
    """The final answer to a GET of ``p["url"]``, redirects followed by the rules of _redirects;
    appends every hop to ``hops``. Raises FetchError or RedirectError."""
    original = current = p["url"]
    auth = bool(p["token"])
    while True:
        try:
            resp = _get(current, p, auth)
        except HTTPError as exc:
            hops.append({"url": rd.redact(current), "status": exc.code, "authorization": auth})
            location = exc.headers.get("Location") if exc.headers is not None else None
            exc.close()
            if exc.code not in rd.REDIRECT_CODES:
                raise FetchError(exc.code, "%s %s" % (exc.code, exc.reason))
            current, auth = rd.next_hop(original, current, location, auth, len(hops) - 1, p["max_redirects"])
            continue
        except (URLError, HTTPException, OSError, ValueError) as exc:
            hops.append({"url": rd.redact(current), "status": -1, "authorization": auth})
            raise FetchError(-1, _reason(exc))
        hops.append({"url": rd.redact(current), "status": resp.getcode(), "authorization": auth})
        return resp


def _stream(resp, out, limit):
    """Copy ``resp`` into ``out`` (None: keep in memory, at most ``limit`` bytes); return
    (sha256, size, the bytes kept)."""
    digest, size, kept = hashlib.sha256(), 0, []
    while True:
        chunk = resp.read(CHUNK)
        if not chunk:
            break
        digest.update(chunk)
        size += len(chunk)
        if out is None:
            if size > limit:
                raise FetchError(-1, "answer too large", "the answer is larger than max_content_bytes (%d)" % limit)
            kept.append(chunk)
        else:
            out.write(chunk)
    return digest.hexdigest(), size, b"".join(kept)


def _fail(module, result, what, status, reason):
    hops = result["redirects"]
    where = (" (at %s)" % hops[-1]["url"]) if len(hops) > 1 else ""
    result.update(status=status, reason=reason)
    name = module.params["host"] or "this host"
    module.fail_json(msg="model_fetch on %s: GET %s%s: %s" % (name, rd.redact(module.params["url"]), where, what),
                     **result)


def fetch(module, result, out):
    """GET the URL, following redirects, into ``out`` (a file; None: return the body); fails the
    task on any error. Returns (sha256, size, body kept)."""
    try:
        resp = open_chain(module.params, result["redirects"])
        with resp:
            answer = _stream(resp, out, module.params["max_content_bytes"])
        if out is not None:
            out.flush()
            os.fsync(out.fileno())
    except FetchError as exc:
        _fail(module, result, exc.what, exc.status, exc.reason)
    except rd.RedirectError as exc:
        _fail(module, result, str(exc), result["redirects"][-1]["status"], str(exc))
    except (HTTPException, OSError) as exc:  # while reading or writing the answer
        _fail(module, result, "reading the answer failed: %s" % _reason(exc), -1, _reason(exc))
    result.update(status=result["redirects"][-1]["status"], size=answer[1])
    return answer


def _hash_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _checked(module):
    """The options' own problems, before anything is sent."""
    p = module.params
    problem = rd.start_problem(p["url"], p["token"])
    if problem:
        return problem
    if p["sha256"] is not None and (len(p["sha256"]) != 64 or set(p["sha256"].lower()) - set("0123456789abcdef")):
        return "sha256 '%s' is not 64 hex digits" % p["sha256"]
    if p["max_redirects"] < 0 or p["timeout"] <= 0 or p["max_content_bytes"] <= 0:
        return "max_redirects must be >= 0, timeout and max_content_bytes > 0"
    dest = p["dest"]
    if dest is not None:
        if os.path.isdir(dest):
            return "dest %s is a directory; give the file's path" % dest
        if not os.path.isdir(os.path.dirname(dest) or "."):
            return "the directory of dest %s does not exist; create it first" % dest
    if p["ca_path"] is not None and not os.path.isfile(p["ca_path"]):
        return "ca_path %s is not a file; give the PEM file of the CA certificates to trust" % p["ca_path"]
    return None


def fetch_content(module, result):
    _digest, _size, body = fetch(module, result, None)
    result["content"] = body.decode("utf-8", "replace")
    try:
        result["json"] = json.loads(result["content"])
    except ValueError:
        pass
    module.exit_json(**result)


def _download(module, result):
    """Fetch into a temporary file beside dest; return its path once its sha256 is right."""
    p = module.params
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(p["dest"]) or ".", prefix=".%s." % os.path.basename(p["dest"]),
                               suffix=".part")
    module.add_cleanup_file(tmp)
    with os.fdopen(fd, "wb") as out:
        digest, size, _kept = fetch(module, result, out)
    result["sha256"] = digest
    if p["sha256"] and digest != p["sha256"].lower():
        _fail(module, result, "the body's sha256 is %s, expected %s (%d bytes); the download was deleted and %s "
                              "left as it was - fetch it again, or check the source"
              % (digest, p["sha256"].lower(), size, p["dest"]), result["status"], "sha256 mismatch")
    return tmp


def fetch_file(module, result):
    p = module.params
    dest = p["dest"]
    result["dest"] = dest
    if os.path.exists(dest) and not p["force"]:
        current = _hash_file(dest) if p["sha256"] else None
        if current is None or current == p["sha256"].lower():
            if current:
                result["sha256"] = current
            file_args = module.load_file_common_arguments(module.params, path=dest)
            result["changed"] = module.set_fs_attributes_if_different(file_args, False)
            module.exit_json(**result)
    result["changed"] = True
    if module.check_mode:
        module.exit_json(**result)
    tmp = _download(module, result)
    file_args = module.load_file_common_arguments(module.params, path=tmp)
    module.set_fs_attributes_if_different(file_args, True)
    os.rename(tmp, dest)
    module.exit_json(**result)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type="str", required=True),
            dest=dict(type="path"),
            token=dict(type="str", no_log=True),
            sha256=dict(type="str"),
            force=dict(type="bool", default=False),
            ca_path=dict(type="path"),
            timeout=dict(type="int", default=60),
            max_redirects=dict(type="int", default=5),
            max_content_bytes=dict(type="int", default=67108864),
            host=dict(type="str", default=""),
        ),
        add_file_common_args=True,
        supports_check_mode=True,
    )
    result = {"changed": False, "url": module.params["url"], "status": -1, "redirects": []}
    problem = _checked(module)
    if problem:
        module.fail_json(msg="model_fetch on %s: %s; nothing was sent" % (module.params["host"] or "this host", problem),
                         reason=problem, **result)
    if module.params["dest"] is None:
        fetch_content(module, result)
    fetch_file(module, result)


if __name__ == "__main__":
    main()
