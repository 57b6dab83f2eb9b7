# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""STAND-IN for the Hugging Face hub (test tooling; there is no internet on the build machines).

Serves a directory in the model_store mirror layout, <root>/<org>/<name>/<revision>/{files...,
model-info.json}, and answers the subset of the hub's HTTP protocol that model_store uses:

  GET  /api/models/<org>/<name>/revision/<rev>[?blobs=true]
       model-info.json of that revision; without blobs=true the siblings carry only rfilename,
       as on the hub. Unknown repo/revision: 404 with X-Error-Code RepoNotFound/RevisionNotFound.
  GET|HEAD /<org>/<name>/resolve/<rev>/<file>
       the file, with X-Repo-Commit and ETag (git blob id, or the LFS sha256); files stored in
       LFS (siblings with "lfs") are answered with a 302 to /_cdn/... as the hub redirects LFS
       downloads to its CDN.

With --token T every /api and /resolve request needs "Authorization: Bearer T" (401 otherwise,
like a gated repository); the CDN path needs none. --log FILE appends one JSON line per request:
method, path, status, whether an Authorization header was present and right, and the names of
the request headers received - never a header's value.

--cdn BASE makes the LFS redirects absolute, to BASE/_cdn/... (the hub's CDN is another host:
cdn-lfs.huggingface.co, cas-bridge.xethub.hf.co); run a second stand-in there with --cdn-only,
which answers only /_cdn/... (404 otherwise), as a CDN knows nothing of the API. --tls-cert and
--tls-key serve https (a test CA: make_test_ca.sh).

  python3 hub_standin.py --root DIR [--bind 127.0.0.1] [--port 8765] [--token T | --token-file F]
                         [--log FILE] [--cdn https://127.0.0.2:8766 | --cdn-only]
                         [--tls-cert CRT --tls-key KEY]
"""

from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import posixpath
import ssl
import sys
import threading

try:
    from http.server import BaseHTTPRequestHandler, HTTPServer
    from socketserver import ThreadingMixIn
    from urllib.parse import urlsplit, parse_qs, unquote
except ImportError:  # pragma: no cover - Python 2 is not supported by this stand-in
    sys.exit("hub_standin needs Python 3")


class Hub(object):
    def __init__(self, root, token=None, log=None, cdn=None, cdn_only=False):
        self.root = os.path.abspath(root)
        self.token = token
        self.log = log
        self.cdn = (cdn or "").rstrip("/")
        self.cdn_only = cdn_only
        self.lock = threading.Lock()

    def revision_dir(self, org, name, rev):
        for part in (org, name, rev):
            if not part or part in (".", "..") or "/" in part:
                return None
        return os.path.join(self.root, org, name, rev)

    def info(self, org, name, rev):
        path = self.revision_dir(org, name, rev)
        if path is None or not os.path.isfile(os.path.join(path, "model-info.json")):
            return None
        with open(os.path.join(path, "model-info.json")) as handle:
            return json.load(handle)

    def record(self, entry):
        if self.log:
            with self.lock, open(self.log, "a") as handle:
                handle.write(json.dumps(entry, sort_keys=True) + "\n")


class Handler(BaseHTTPRequestHandler):
    server_version = "hub-standin/1"
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet; --log records requests
        pass

    def _auth(self, hub):
        given = self.headers.get("Authorization")
        if given is None:
            return "absent"
        return "ok" if hub.token and given == "Bearer %s" % hub.token else "bad"

    def _send(self, status, body=b"", headers=None, head=False):
        self.send_response(status)
        headers = dict(headers or {})
        headers.setdefault("Content-Length", str(len(body)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        if body and not head:
            self.wfile.write(body)

    def _error(self, status, code, message, head=False):
        body = json.dumps({"error": message}).encode()
        self._send(status, body, {"Content-Type": "application/json", "X-Error-Code": code,
                                  "X-Error-Message": message}, head)
        return status

    def _file(self, path, headers, head):
        with open(path, "rb") as handle:
            body = handle.read()
        headers["Content-Type"] = "application/octet-stream"
        self._send(200, body, headers, head)
        return 200

    def _handle(self, head=False):
        hub = self.server.hub
        url = urlsplit(self.path)
        parts = [unquote(p) for p in url.path.split("/")[1:]]
        auth = self._auth(hub)
        status = None
        try:
            if parts[:1] == ["_cdn"] and len(parts) >= 5:
                org, name, rev, rel = parts[1], parts[2], parts[3], "/".join(parts[4:])
                status = self._serve_file(hub, org, name, rev, rel, head, cdn=True)
            elif hub.cdn_only:
                status = self._error(404, "EntryNotFound", "the CDN stand-in serves only /_cdn/", head)
            elif hub.token and auth != "ok" and (parts[:2] == ["api", "models"] or "resolve" in parts):
                status = self._error(401, "GatedRepo" if auth == "absent" else "InvalidCredentials",
                                     "Access to this model requires a valid token", head)
            elif parts[:2] == ["api", "models"] and len(parts) == 6 and parts[4] == "revision":
                status = self._api(hub, parts[2], parts[3], parts[5], parse_qs(url.query), head)
            elif len(parts) >= 5 and parts[2] == "resolve":
                status = self._serve_file(hub, parts[0], parts[1], parts[3], "/".join(parts[4:]), head)
            else:
                status = self._error(404, "EntryNotFound", "no such endpoint in the hub stand-in", head)
        finally:
            hub.record({"method": self.command, "path": url.path, "query": url.query, "status": status,
                        "auth": auth, "headers": sorted(set(k.lower() for k in self.headers.keys()))})

    def _api(self, hub, org, name, rev, query, head):
        if not os.path.isdir(os.path.join(hub.root, org, name)):
            return self._error(404, "RepoNotFound", "Repository not found", head)
        info = hub.info(org, name, rev)
        if info is None:
            return self._error(404, "RevisionNotFound", "Invalid rev id: %s" % rev, head)
        if query.get("blobs", ["false"])[0].lower() not in ("true", "1"):
            info = dict(info, siblings=[{"rfilename": s["rfilename"]} for s in info["siblings"]])
        body = json.dumps(info).encode()
        self._send(200, body, {"Content-Type": "application/json"}, head)
        return 200

    def _serve_file(self, hub, org, name, rev, rel, head, cdn=False):
        info = hub.info(org, name, rev)
        if info is None:
            return self._error(404, "RevisionNotFound", "Invalid rev id: %s" % rev, head)
        sib = [s for s in info["siblings"] if s["rfilename"] == rel]
        if not sib or posixpath.normpath(rel) != rel or rel.startswith("../"):
            return self._error(404, "EntryNotFound", "%s does not exist at %s" % (rel, rev), head)
        sib = sib[0]
        lfs = sib.get("lfs")
        headers = {"X-Repo-Commit": info["sha"], "ETag": '"%s"' % (lfs["sha256"] if lfs else sib["blobId"])}
        if lfs and not cdn:
            headers["Location"] = "%s/_cdn/%s/%s/%s/%s" % (hub.cdn, org, name, rev, rel)
            headers["X-Linked-Size"] = str(lfs["size"])
            headers["X-Linked-Etag"] = '"%s"' % lfs["sha256"]
            self._send(302, b"", headers, head)
            return 302
        return self._file(os.path.join(hub.revision_dir(org, name, rev), rel), headers, head)

    def do_GET(self):
        self._handle()

    def do_HEAD(self):
        self._handle(head=True)


class Server(ThreadingMixIn, HTTPServer):
    daemon_threads = True


def make_server(root, bind="127.0.0.1", port=0, token=None, log=None, cdn=None, cdn_only=False, tls=None):
    """The stand-in, not started; ``tls``: (certificate file, key file) to serve https."""
    server = Server((bind, port), Handler)
    server.hub = Hub(root, token, log, cdn, cdn_only)
    if tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(tls[0], tls[1])
        server.socket = context.wrap_socket(server.socket, server_side=True)
    return server


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--root", required=True)
    parser.add_argument("--bind", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--token")
    parser.add_argument("--token-file", help="read the token from this file (keeps it off the command line)")
    parser.add_argument("--log")
    parser.add_argument("--cdn", help="base URL of the CDN stand-in the LFS redirects point at")
    parser.add_argument("--cdn-only", action="store_true", help="answer only /_cdn/ (be the CDN)")
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-key")
    args = parser.parse_args(argv)
    token = args.token
    if args.token_file:
        with open(args.token_file) as handle:
            token = handle.read().strip()
    tls = (args.tls_cert, args.tls_key) if args.tls_cert else None
    server = make_server(args.root, args.bind, args.port, token, args.log, args.cdn, args.cdn_only, tls)
    server.serve_forever()


if __name__ == "__main__":
    main()
