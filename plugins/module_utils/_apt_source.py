# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""apt source entries and OpenPGP key fingerprints: pure logic, no Ansible, no I/O.

- ``fingerprints(data)``: fingerprints of the public (sub)keys in an OpenPGP key file, armoured
  or binary (RFC 4880 section 12.2 for v4: SHA-1 over 0x99, a two-octet length and the key packet
  body; RFC 9580 section 5.5.4 for v6: SHA-256 over 0x9B, a four-octet length and the body).
- ``parse_one_line`` / ``parse_deb822``: entries of ``sources.list``/``*.list`` and ``*.sources``.
- ``foreign_entries``: entries for a repository URI outside the file the collection owns, with
  what to do about each file (remove the file, or remove the lines, or refuse).
- ``signed_by_conflict``: whether definitions of one repository disagree on Signed-By (apt then
  refuses to read any source).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii
import hashlib
import re


class OpenPGPKeyError(ValueError):
    """The key data is not an OpenPGP public key."""


_ARMOR_BEGIN = re.compile(r"^-----BEGIN PGP (PUBLIC|PRIVATE) KEY BLOCK-----\s*$")
_ARMOR_END = re.compile(r"^-----END PGP (PUBLIC|PRIVATE) KEY BLOCK-----\s*$")
PUBLIC_KEY_TAGS = (6, 14)  # public key, public subkey


def dearmor(text):
    """Binary packets of the first ASCII-armoured key block in ``text``."""
    lines = text.splitlines()
    body, state = [], "before"
    for line in lines:
        if state == "before":
            if _ARMOR_BEGIN.match(line.strip()):
                state = "headers"
        elif state == "headers":
            if not line.strip():
                state = "body"
            elif ":" not in line:  # no armour headers at all
                state = "body"
                body.append(line.strip())
        elif state == "body":
            stripped = line.strip()
            if _ARMOR_END.match(stripped):
                state = "done"
                break
            if stripped.startswith("="):  # CRC-24 checksum line
                continue
            body.append(stripped)
    if state != "done":
        raise OpenPGPKeyError("no complete '-----BEGIN PGP PUBLIC KEY BLOCK-----' block")
    try:
        return base64.b64decode("".join(body).encode("ascii"), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise OpenPGPKeyError("the armoured key is not valid base64: %s" % exc)


def packets(data):
    """(tag, body, raw) of each OpenPGP packet in ``data`` (old and new packet formats);
    raw is the whole packet, header included."""
    pos, out = 0, []
    while pos < len(data):
        start = pos
        first = data[pos]
        if not first & 0x80:
            raise OpenPGPKeyError("byte %d is not an OpenPGP packet header" % pos)
        if first & 0x40:  # new format
            tag = first & 0x3F
            pos += 1
            if pos >= len(data):
                raise OpenPGPKeyError("truncated packet header")
            octet = data[pos]
            if octet < 192:
                length, pos = octet, pos + 1
            elif octet < 224:
                if pos + 1 >= len(data):
                    raise OpenPGPKeyError("truncated packet length")
                length, pos = ((octet - 192) << 8) + data[pos + 1] + 192, pos + 2
            elif octet == 255:
                length, pos = int.from_bytes(data[pos + 1:pos + 5], "big"), pos + 5
            else:
                raise OpenPGPKeyError("partial body lengths are not used in key packets")
        else:  # old format
            tag = (first >> 2) & 0x0F
            size = {0: 1, 1: 2, 2: 4}.get(first & 0x03)
            if size is None:
                raise OpenPGPKeyError("indeterminate packet length")
            length = int.from_bytes(data[pos + 1:pos + 1 + size], "big")
            pos += 1 + size
        if pos + length > len(data):
            raise OpenPGPKeyError("truncated packet (tag %d)" % tag)
        out.append((tag, data[pos:pos + length], data[start:pos + length]))
        pos += length
    return out


def fingerprint(body):
    """Upper-case hex fingerprint of one public-key packet body (v4 or v6)."""
    version = body[0] if body else None
    if version == 4:
        return hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body).hexdigest().upper()
    if version == 6:
        return hashlib.sha256(b"\x9b" + len(body).to_bytes(4, "big") + body).hexdigest().upper()
    raise OpenPGPKeyError("OpenPGP key version %s is not supported (v4 and v6 are)" % version)


def fingerprints(data):
    """Fingerprints of the primary keys and subkeys in an armoured or binary key file."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    if b"-----BEGIN PGP" in data:
        data = dearmor(data.decode("utf-8", "replace"))
    found = [fingerprint(body) for tag, body, dummy in packets(data) if tag in PUBLIC_KEY_TAGS]
    if not found:
        raise OpenPGPKeyError("no OpenPGP public key in the data")
    return found


def public_packets(data):
    """The key file's packets without secret key material (tags 5 and 7), binary."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    if b"-----BEGIN PGP" in data:
        data = dearmor(data.decode("utf-8", "replace"))
    return b"".join(raw for tag, dummy, raw in packets(data) if tag not in (5, 7))


def normalize_fingerprint(value):
    return re.sub(r"\s+", "", value or "").upper().replace("0X", "", 1) if value else ""


def armor(data):
    """ASCII armour for binary public key packets (RFC 4880 section 6), for a .asc keyring."""
    crc = 0xB704CE
    for byte in bytearray(data):
        crc ^= byte << 16
        for dummy in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= 0x1864CFB
    crc &= 0xFFFFFF
    encoded = base64.b64encode(data).decode("ascii")
    lines = [encoded[i:i + 64] for i in range(0, len(encoded), 64)]
    checksum = base64.b64encode(crc.to_bytes(3, "big")).decode("ascii")
    return "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n%s\n=%s\n-----END PGP PUBLIC KEY BLOCK-----\n" % (
        "\n".join(lines), checksum)


def normalize_uri(uri):
    """Compare repository URIs as apt's duplicate check should: http/https alike, no trailing /."""
    uri = (uri or "").strip()
    match = re.match(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<host>[^/]*)(?P<path>.*)$", uri)
    if not match:
        return uri.rstrip("/")
    scheme = match.group("scheme").lower()
    if scheme in ("http", "https"):
        scheme = "http(s)"
    return "%s://%s%s" % (scheme, match.group("host").lower(), re.sub("/+", "/", match.group("path")).rstrip("/"))


_ONE_LINE = re.compile(r"^\s*(?P<type>deb|deb-src)\s+(?:\[(?P<opts>[^\]]*)\]\s+)?(?P<uri>\S+)\s+(?P<suite>\S+)(?P<rest>.*)$")


def parse_one_line(path, text):
    """Entries of a one-line-style file (sources.list, *.list). Commented lines are not entries."""
    entries = []
    for number, line in enumerate(text.splitlines(), 1):
        match = _ONE_LINE.match(line.split("#", 1)[0])
        if not match:
            continue
        options = {}
        for opt in (match.group("opts") or "").split():
            key, dummy, value = opt.partition("=")
            options[key.lower()] = value
        entries.append({
            "file": path, "format": "one-line", "line": line, "line_number": number,
            "types": [match.group("type")], "uris": [match.group("uri")],
            "suites": [match.group("suite")], "signed_by": options.get("signed-by") or None,
            "enabled": True,
        })
    return entries


def parse_deb822(path, text):
    """Stanzas of a deb822 *.sources file; fields are case-insensitive, continuation lines kept."""
    entries, stanza, last = [], {}, None
    number, start = 0, 1

    def close():
        if stanza:
            entries.append({
                "file": path, "format": "deb822", "line": None, "line_number": start,
                "types": stanza.get("types", "").split(), "uris": stanza.get("uris", "").split(),
                "suites": stanza.get("suites", "").split(),
                "signed_by": stanza.get("signed-by", "").strip() or None,
                "enabled": stanza.get("enabled", "yes").strip().lower() not in ("no", "false", "0"),
            })

    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("#"):
            continue
        if not line.strip():
            close()
            stanza, last = {}, None
            continue
        if line[0] in " \t" and last:
            stanza[last] += "\n" + line.strip()
            continue
        key, sep, value = line.partition(":")
        if sep:
            if not stanza:
                start = number
            last = key.strip().lower()
            stanza[last] = value.strip()
    close()
    return entries


def parse_sources(path, text):
    if path.endswith(".sources"):
        return parse_deb822(path, text)
    return parse_one_line(path, text)


def foreign_entries(entries, uri, owned_file):
    """Entries for ``uri`` (see normalize_uri) in files other than ``owned_file``, and per file
    the action that removes them: ``remove_file`` when every entry of the file is for ``uri``,
    ``remove_lines`` for one-line files that also carry other repositories, ``refuse`` for a deb822
    file that mixes this repository with others (a stanza cannot be cut out safely)."""
    wanted = normalize_uri(uri)
    by_file = {}
    for entry in entries:
        by_file.setdefault(entry["file"], []).append(entry)
    foreign, actions = [], {}
    for path in sorted(by_file):
        if path == owned_file:
            continue
        ours = [e for e in by_file[path] if e["enabled"] and any(normalize_uri(u) == wanted for u in e["uris"])]
        if not ours:
            continue
        foreign.extend(ours)
        if len(ours) == len(by_file[path]) and all(len(e["uris"]) == 1 for e in ours):
            actions[path] = "remove_file"
        elif ours[0]["format"] == "one-line":
            actions[path] = "remove_lines"
        else:
            actions[path] = "refuse"
    return foreign, actions


def signed_by_conflict(entries):
    """Whether apt stops on ``entries`` (in apt's reading order: sources.list, then the files of
    sources.list.d sorted by name) with "Conflicting values set for option Signed-By": per
    repository (URI, see normalize_uri, and suite) the first entry's Signed-By holds; a later entry
    may add one where there was none, any other difference is a conflict (apt 2.6.2: none then a
    key is accepted, a key then none or another key is refused; apt 2.2.4 refuses two keys too,
    tests/fixtures/apt_policy/debian11/indextargets_conflict.err)."""
    held = {}
    for entry in entries:
        if not entry["enabled"]:
            continue
        value = entry["signed_by"] or ""
        for uri in entry["uris"]:
            for suite in entry["suites"] or [""]:
                key = (normalize_uri(uri), suite)
                if key not in held or not held[key]:
                    held[key] = held.get(key) or value
                elif held[key] != value:
                    return True
    return False
