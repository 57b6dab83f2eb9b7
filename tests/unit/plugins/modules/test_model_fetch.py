# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""model_fetch run as Ansible runs it (run_module) against the hub stand-in over https: the hub
on 127.0.0.1 answers LFS downloads with a 302 to a CDN stand-in on 127.0.0.2, another host to
the client, as huggingface.co redirects to its CDN. Both record the names of the headers they got.
The certificates come from tests/simulator/hub_standin/make_test_ca.sh (a fresh test CA);
expected checksums and bytes from the planted model in tests/fixtures/hub/."""

import glob
import hashlib
import json
import os
import ssl
import subprocess
import sys
import tempfile
import threading

import pytest

from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import (
    CACHE_ENV, HUB_MODEL, HUB_REPO, HUB_REV, ROOT, cached, fixture_path, hub_info, run_module)

try:
    from http.server import BaseHTTPRequestHandler, HTTPServer
except ImportError:  # pragma: no cover
    pytest.skip("Python 3 only", allow_module_level=True)

STANDIN = os.path.join(ROOT, "tests", "simulator", "hub_standin")
TOKEN = "hf_unit_Secret0123456789"
WEIGHTS = "model.safetensors"


def _standin():
    sys.path.insert(0, STANDIN)
    try:
        import hub_standin
    finally:
        sys.path.pop(0)
    return hub_standin


def _make_ca():
    directory = tempfile.mkdtemp(prefix="test-ca-", dir=os.environ.get(CACHE_ENV))
    subprocess.run(["sh", os.path.join(STANDIN, "make_test_ca.sh"), directory], check=True,
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return directory


@pytest.fixture
def ca():
    directory = cached("model_fetch test CA", _make_ca)
    return {"ca": os.path.join(directory, "ca.crt"),
            "tls": (os.path.join(directory, "server.crt"), os.path.join(directory, "server.key"))}


def _serve(server):
    thread = threading.Thread(target=server.serve_forever)
    thread.daemon = True
    thread.start()
    return server


@pytest.fixture
def hubs(tmp_path, ca):
    """The CDN stand-in on 127.0.0.2 and the hub stand-in on 127.0.0.1 redirecting to it."""
    hub_standin = _standin()
    root = fixture_path("hub")
    cdn = _serve(hub_standin.make_server(root, bind="127.0.0.2", log=str(tmp_path / "cdn.log"), cdn_only=True,
                                         tls=ca["tls"]))
    cdn_url = "https://127.0.0.2:%d" % cdn.server_address[1]
    hub = _serve(hub_standin.make_server(root, bind="127.0.0.1", token=TOKEN, log=str(tmp_path / "hub.log"),
                                         cdn=cdn_url, tls=ca["tls"]))
    yield {"hub": "https://127.0.0.1:%d" % hub.server_address[1], "cdn": cdn_url,
           "hub_log": tmp_path / "hub.log", "cdn_log": tmp_path / "cdn.log"}
    for server in (hub, cdn):
        server.shutdown()
        server.server_close()


@pytest.fixture
def same_host_hub(tmp_path, ca):
    """The stand-in as it was: the LFS redirect is relative, to /_cdn/ on the hub itself."""
    server = _serve(_standin().make_server(fixture_path("hub"), token=TOKEN, log=str(tmp_path / "hub.log"),
                                           tls=ca["tls"]))
    yield "https://127.0.0.1:%d" % server.server_address[1], tmp_path / "hub.log"
    server.shutdown()
    server.server_close()


def _log(path):
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def _resolve_url(base, name):
    return "%s/%s/resolve/%s/%s" % (base, HUB_REPO, HUB_REV, name)


def _lfs_sha256(name):
    return [s["lfs"]["sha256"] for s in hub_info()["siblings"] if s["rfilename"] == name][0]


def fetch(tmp_path, args, check_mode=False):
    rc, res = run_module(tmp_path, "model_fetch", args, check_mode=check_mode)
    assert TOKEN not in json.dumps(res)
    for log in glob.glob(str(tmp_path / "*.log")):
        with open(log) as handle:
            assert TOKEN not in handle.read()
    return rc, res


# --- the hub's CDN redirect --------------------------------------------------------------------

def test_lfs_download_goes_to_the_cdn_without_the_token_and_verifies(tmp_path, hubs, ca):
    dest = tmp_path / "staging" / WEIGHTS
    dest.parent.mkdir()
    url = _resolve_url(hubs["hub"], WEIGHTS)
    rc, res = fetch(tmp_path, {"url": url, "dest": str(dest), "token": TOKEN, "sha256": _lfs_sha256(WEIGHTS),
                               "ca_path": ca["ca"], "mode": "0640", "host": "h1"})
    assert rc == 0, res
    assert res["changed"] is True and res["status"] == 200
    assert res["redirects"] == [
        {"url": url, "status": 302, "authorization": True},
        {"url": "%s/_cdn/%s/%s/%s" % (hubs["cdn"], HUB_REPO, HUB_REV, WEIGHTS), "status": 200, "authorization": False}]
    assert dest.read_bytes() == open(fixture_path(HUB_MODEL + "/" + WEIGHTS), "rb").read()
    assert hashlib.sha256(dest.read_bytes()).hexdigest() == _lfs_sha256(WEIGHTS) == res["sha256"]
    assert oct(dest.stat().st_mode & 0o777) == "0o640"
    assert os.listdir(str(dest.parent)) == [WEIGHTS]  # no temporary file left
    hub = [e for e in _log(hubs["hub_log"]) if e["path"].endswith(WEIGHTS)]
    assert [(e["status"], e["auth"], "authorization" in e["headers"]) for e in hub] == [(302, "ok", True)]
    cdn = _log(hubs["cdn_log"])
    assert [(e["status"], e["auth"], "authorization" in e["headers"]) for e in cdn] == [(200, "absent", False)]
    assert "host" in cdn[0]["headers"]  # the log does hold the header names it got


def test_same_origin_redirect_keeps_the_token(tmp_path, same_host_hub, ca):
    base, log = same_host_hub
    dest = tmp_path / WEIGHTS
    rc, res = fetch(tmp_path, {"url": _resolve_url(base, WEIGHTS), "dest": str(dest), "token": TOKEN,
                               "sha256": _lfs_sha256(WEIGHTS), "ca_path": ca["ca"]})
    assert rc == 0, res
    assert [h["authorization"] for h in res["redirects"]] == [True, True]
    assert [(e["path"].startswith("/_cdn/"), e["auth"]) for e in _log(log)] == [(False, "ok"), (True, "ok")]


def test_revision_api_answer_is_returned_as_json(tmp_path, hubs, ca):
    url = "%s/api/models/%s/revision/%s?blobs=true" % (hubs["hub"], HUB_REPO, HUB_REV)
    rc, res = fetch(tmp_path, {"url": url, "token": TOKEN, "ca_path": ca["ca"]}, check_mode=True)
    assert rc == 0, res
    assert res["changed"] is False and res["status"] == 200
    assert res["json"] == hub_info()
    assert [(e["query"], e["auth"]) for e in _log(hubs["hub_log"])] == [("blobs=true", "ok")]


# --- the file on the host ------------------------------------------------------------------------

def test_a_wrong_checksum_deletes_the_download_and_keeps_dest(tmp_path, hubs, ca):
    dest = tmp_path / "d" / WEIGHTS
    dest.parent.mkdir()
    dest.write_bytes(b"the previous file")
    url = _resolve_url(hubs["hub"], WEIGHTS)
    rc, res = fetch(tmp_path, {"url": url, "dest": str(dest), "token": TOKEN, "sha256": "0" * 64,
                               "ca_path": ca["ca"], "host": "h1"})
    assert rc == 1
    assert res["msg"].startswith("model_fetch on h1: GET %s (at %s/_cdn/" % (url, hubs["cdn"]))
    assert "sha256 is %s, expected %s" % (_lfs_sha256(WEIGHTS), "0" * 64) in res["msg"]
    assert dest.read_bytes() == b"the previous file"
    assert os.listdir(str(dest.parent)) == [WEIGHTS]


def test_check_mode_sends_nothing_and_reports_a_change(tmp_path, hubs, ca):
    dest = tmp_path / WEIGHTS
    rc, res = fetch(tmp_path, {"url": _resolve_url(hubs["hub"], WEIGHTS), "dest": str(dest), "token": TOKEN,
                               "ca_path": ca["ca"]}, check_mode=True)
    assert rc == 0 and res["changed"] is True and res["redirects"] == []
    assert not dest.exists() and _log(hubs["hub_log"]) == []


def test_a_dest_that_already_verifies_is_not_fetched_again(tmp_path, hubs, ca):
    dest = tmp_path / WEIGHTS
    dest.write_bytes(open(fixture_path(HUB_MODEL + "/" + WEIGHTS), "rb").read())
    dest.chmod(0o600)
    rc, res = fetch(tmp_path, {"url": _resolve_url(hubs["hub"], WEIGHTS), "dest": str(dest), "token": TOKEN,
                               "sha256": _lfs_sha256(WEIGHTS), "ca_path": ca["ca"], "mode": "0600"})
    assert rc == 0 and res["changed"] is False and res["sha256"] == _lfs_sha256(WEIGHTS)
    assert _log(hubs["hub_log"]) == []


# --- failures name the URL, never the token --------------------------------------------------------

def test_without_a_token_the_gated_hub_answers_401(tmp_path, hubs, ca):
    url = "%s/api/models/%s/revision/%s?blobs=true" % (hubs["hub"], HUB_REPO, HUB_REV)
    rc, res = fetch(tmp_path, {"url": url, "ca_path": ca["ca"], "host": "h1"})
    assert rc == 1 and res["status"] == 401
    assert res["msg"] == "model_fetch on h1: GET %s: answered 401 Unauthorized" % url.split("?")[0]


def test_the_private_ca_is_needed(tmp_path, hubs):
    url = _resolve_url(hubs["hub"], "config.json")
    rc, res = fetch(tmp_path, {"url": url, "token": TOKEN, "dest": str(tmp_path / "config.json")})
    assert rc == 1 and res["status"] == -1
    assert "CERTIFICATE_VERIFY_FAILED" in res["msg"] and "ca_path" in res["msg"] and url in res["msg"]
    assert not (tmp_path / "config.json").exists()


@pytest.mark.parametrize("url, token, why", [
    ("http://127.0.0.1:9/x", TOKEN,
     "http://127.0.0.1:9/x is plain http: the token would cross the network in clear text; use the https:// endpoint"),
    ("https://127.0.0.1:9/x", TOKEN + "\nX-Injected: 1", "the token contains a line break (CR or LF)"),
    ("https://127.0.0.1:9/x", TOKEN + " ", "the token contains whitespace"),
])
def test_refused_before_anything_is_sent(tmp_path, url, token, why):
    rc, res = run_module(tmp_path, "model_fetch", {"url": url, "token": token, "host": "h1"})
    assert rc == 1 and res["redirects"] == []
    assert res["msg"] == "model_fetch on h1: %s; nothing was sent" % why
    assert token not in json.dumps(res)


# --- hops that are refused, against a stand-in that redirects as asked ---------------------------

class _Redirector(BaseHTTPRequestHandler):
    """TEST-ONLY server answering 302 to everything: GET /to?<Location> with that Location,
    /loop with /loop, anything else without a Location. Records each request's path and header
    names in server.seen."""

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        self.server.seen.append((self.path, sorted(k.lower() for k in self.headers.keys())))
        self.send_response(302)
        if self.path.startswith("/to?"):
            self.send_header("Location", self.path[len("/to?"):])
        elif self.path == "/loop":
            self.send_header("Location", "/loop")
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture
def redirector(ca):
    servers = {}
    for name, bind, tls in (("tls", "127.0.0.1", True), ("plain", "127.0.0.2", False)):
        server = HTTPServer((bind, 0), _Redirector)
        server.seen = []
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*ca["tls"])
            server.socket = context.wrap_socket(server.socket, server_side=True)
        servers[name] = _serve(server)
    yield {name: ("https" if name == "tls" else "http") + "://%s:%d" % s.server_address
           for name, s in servers.items()}, servers
    for server in servers.values():
        server.shutdown()
        server.server_close()


def test_https_to_http_downgrade_is_refused_and_the_http_host_sees_nothing(tmp_path, redirector, ca):
    urls, servers = redirector
    url = "%s/to?%s/x" % (urls["tls"], urls["plain"])
    rc, res = fetch(tmp_path, {"url": url, "token": TOKEN, "ca_path": ca["ca"]})
    assert rc == 1 and "redirected from https to http (%s/x): downgrade refused" % urls["plain"] in res["msg"]
    assert servers["plain"].seen == []


def test_redirects_are_bounded_and_need_a_location(tmp_path, redirector, ca):
    urls, servers = redirector
    rc, res = fetch(tmp_path, {"url": "%s/loop" % urls["tls"], "token": TOKEN, "ca_path": ca["ca"], "max_redirects": 3})
    assert rc == 1 and "%s/loop redirected again after 3 redirect(s), the most allowed" % urls["tls"] in res["msg"]
    assert res["redirects"] == [{"url": "%s/loop" % urls["tls"], "status": 302, "authorization": True}] * 4
    assert [path for path, _names in servers["tls"].seen] == ["/loop"] * 4
    rc, res = fetch(tmp_path, {"url": "%s/none" % urls["tls"], "ca_path": ca["ca"]})
    assert rc == 1 and "%s/none answered a redirect without a Location header" % urls["tls"] in res["msg"]


def test_a_redirect_to_another_scheme_is_refused(tmp_path, redirector, ca):
    urls, _servers = redirector
    rc, res = fetch(tmp_path, {"url": "%s/to?file:///etc/passwd" % urls["tls"], "ca_path": ca["ca"]})
    assert rc == 1 and "redirected to a file: URL, only http(s) is followed" in res["msg"]
