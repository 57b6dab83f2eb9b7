# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Following HTTP redirects without leaking a bearer token: the rules ``model_fetch`` applies to
every hop. Private to the collection; pure functions, no Ansible imports, no I/O.

Why our own: ``ansible.builtin.uri`` and ``get_url`` (``open_url`` with any following
``follow_redirects``) copy every request header, ``Authorization`` included, to whatever host a
redirect names; the Hugging Face hub answers every LFS download with a 302 to a CDN host. The
rules here are those of ``requests`` (``Session.rebuild_auth``/``should_strip_auth``) and curl
(``--location`` without ``--location-trusted``), made stricter:

- the token is sent only to the origin (scheme, host, port) of the URL asked for; once a hop
  leaves that origin it is never sent again in the chain, even if a later hop comes back;
- an ``https`` hop never redirects to ``http`` (refused, whatever the token);
- only ``http``/``https`` targets, no credentials in a ``Location``, a bounded number of hops;
- a relative ``Location`` is resolved against the URL that answered it (RFC 9110, 10.2.2).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from urllib.parse import quote, urljoin, urlsplit, urlunsplit

# Statuses that carry a Location to follow (a GET stays a GET for all of them).
REDIRECT_CODES = (301, 302, 303, 307, 308)
DEFAULT_PORTS = {"http": 80, "https": 443}
# Characters left as they are when a Location is re-quoted (RFC 3986 reserved + unreserved + %).
_SAFE = "%/:=&?~#+!$,;'@()*[]-._"
_TOKEN_OK = re.compile(r"[!-~]+\Z")  # visible ASCII, no space: what a header value may carry as is


class RedirectError(Exception):
    """A hop that must not be followed; the message says why (never a token)."""


# --- URLs --------------------------------------------------------------------------------------

def origin(url):
    """``(scheme, host, port)`` of an http(s) URL, host lower-cased and port defaulted; raises
    RedirectError for another scheme, no host or a bad port."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise RedirectError("%s is not an http:// or https:// URL" % redact(url))
    if not parts.hostname:
        raise RedirectError("%s names no host" % redact(url))
    try:
        port = parts.port
    except ValueError:
        raise RedirectError("%s has an invalid port" % redact(url))
    return scheme, parts.hostname.lower(), port or DEFAULT_PORTS[scheme]


def same_origin(first, second):
    """True when both URLs have the same scheme, host and (defaulted) port."""
    return origin(first) == origin(second)


def redact(url):
    """``url`` fit for a log: without user info, query and fragment (a CDN's signed query)."""
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _has_userinfo(url):
    return "@" in urlsplit(url).netloc


# --- the token and the first request -------------------------------------------------------------

def token_problem(token):
    """Why ``token`` cannot go into an ``Authorization`` header as is, or None (also for no token).
    The reason never quotes the token."""
    if not token:
        return None
    if any(ch in token for ch in "\r\n"):
        return "contains a line break (CR or LF)"
    if any(ch.isspace() for ch in token):
        return "contains whitespace"
    if not _TOKEN_OK.match(token):
        return "contains a non-printable or non-ASCII character"
    return None


def start_problem(url, token):
    """Why ``url`` must not be asked for (with ``token`` when given), or None."""
    try:
        scheme = origin(url)[0]
    except RedirectError as exc:
        return str(exc)
    if _has_userinfo(url):
        return "%s carries user credentials in the URL; give a token instead" % redact(url)
    if token and scheme != "https":
        return ("%s is plain http: the token would cross the network in clear text; use the https:// "
                "endpoint" % redact(url))
    problem = token_problem(token)
    return "the token %s" % problem if problem else None


# --- one redirect ------------------------------------------------------------------------------

def resolve(current, location):
    """The absolute URL a ``Location`` header (absolute or relative) points at from ``current``,
    re-quoted (spaces, non-ASCII) and without a fragment."""
    location = (location or "").strip()
    if not location:
        raise RedirectError("%s answered a redirect without a Location header" % redact(current))
    target = urljoin(current, quote(location, safe=_SAFE))
    parts = urlsplit(target)
    return urlunsplit((parts.scheme, parts.netloc, parts.path or "/", parts.query, ""))


def next_hop(original, current, location, auth, followed, max_redirects):
    """Where to go after ``current`` answered a redirect to ``location``, and whether to send the
    token there: ``(url, send_auth)``.

    ``original``: the URL first asked for (the token's origin); ``auth``: whether the token was
    sent to ``current``; ``followed``: redirects already followed in this chain. Raises
    RedirectError when the hop is refused."""
    if followed >= max_redirects:
        raise RedirectError("%s redirected again after %d redirect(s), the most allowed"
                            % (redact(current), max_redirects))
    target = resolve(current, location)
    scheme = urlsplit(target).scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise RedirectError("%s redirected to a %s: URL, only http(s) is followed" % (redact(current), scheme))
    if urlsplit(current).scheme.lower() == "https" and scheme == "http":
        raise RedirectError("%s redirected from https to http (%s): downgrade refused"
                            % (redact(current), redact(target)))
    if _has_userinfo(target):
        raise RedirectError("%s redirected to a URL carrying user credentials (%s): refused"
                            % (redact(current), redact(target)))
    origin(target)  # raises for no host or a bad port
    return target, bool(auth and same_origin(original, target))
