# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""apt's pin decisions: which version apt would install, and which pin files decide it.

Private to the collection. Pure code: no Ansible imports, no I/O. The caller (the
``apt_pin_check`` module) runs ``apt-cache policy`` against a private copy of the host's
preferences in which the collection's own pin file is the one it would write, and reads the
preference files; this module parses both and decides:

* :func:`parse_policy`: ``apt-cache policy PACKAGE...`` output (``LC_ALL=C``);
* :func:`preferences_file_read`: whether apt reads a file of ``preferences.d`` (apt's own rule);
* :func:`parse_preferences`: the stanzas of an ``apt_preferences(5)`` file;
* :func:`check_pins`: per wanted ``package=version``, whether apt's candidate is that version
  (the ``apt`` module of Ansible refuses with "no available installation candidate" otherwise),
  and the pin stanzas of OTHER files that decide it;
* :func:`apt_errors`: apt's ``E:`` lines, once each.

Fixtures: ``tests/fixtures/apt_policy/`` (real apt 2.2.4 and 2.6.2 output, ``capture.sh``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import re

__all__ = ["parse_policy", "preferences_file_read", "parse_preferences", "stanza_applies",
           "version_pin_matches", "check_pins", "describe", "apt_errors"]

# ---------------------------------------------------------------------------------------------
# apt-cache policy
# ---------------------------------------------------------------------------------------------

_HEADER = re.compile(r"^(?P<name>\S+):$")
_FIELD = re.compile(r"^  (?P<key>Installed|Candidate|Package pin): (?P<value>.*)$")
_VERSION = re.compile(r"^ (?P<mark>\*\*\*|   ) (?P<version>\S+) (?P<priority>-?\d+)$")
_SOURCE = re.compile(r"^\s{4,}(?P<priority>-?\d+) (?P<source>\S.*?)\s*$")


def _none(value):
    value = value.strip()
    return None if value in ("", "(none)") else value


def parse_policy(text):
    """``apt-cache policy PACKAGE...`` output as ``{package: {installed, candidate, versions}}``;
    each version ``{version, priority, installed, sources: [{priority, source, repository}]}``
    (``repository`` is false for the dpkg status file). Packages apt does not know are absent."""
    out, package, version = {}, None, None
    for line in (text or "").splitlines():
        header = _HEADER.match(line)
        if header:
            package = {"installed": None, "candidate": None, "versions": []}
            out[header.group("name")] = package
            version = None
            continue
        if package is None:
            continue
        field = _FIELD.match(line)
        if field:
            key = field.group("key").lower().replace(" ", "_")
            package[key] = _none(field.group("value"))
            continue
        match = _VERSION.match(line)
        if match:
            version = {"version": match.group("version"), "priority": int(match.group("priority")),
                       "installed": match.group("mark") == "***", "sources": []}
            package["versions"].append(version)
            continue
        source = _SOURCE.match(line)
        if source and version is not None:
            text = source.group("source")
            version["sources"].append({"priority": int(source.group("priority")), "source": text,
                                       "repository": text.endswith(" Packages")})
    return out


def repository_versions(info):
    """Versions of a parsed package that some repository offers (not only the dpkg status)."""
    return [v["version"] for v in (info or {}).get("versions", []) if any(s["repository"] for s in v["sources"])]


def version_priority(info, version):
    for entry in (info or {}).get("versions", []):
        if entry["version"] == version:
            return entry["priority"]
    return None


# ---------------------------------------------------------------------------------------------
# apt_preferences(5)
# ---------------------------------------------------------------------------------------------

# apt reads a file of preferences.d when its name has only letters, digits, '_', '-', ':' and
# '.', and either no '.' or the extension 'pref' (checked with apt 2.2.4 and 2.6.2: a.bak,
# x.disabled, g.PREF, x~, .hidden, 'sp ace' are ignored; nodot, b.pref and e:f are read).
_READ_NAME = re.compile(r"^[A-Za-z0-9_:.-]+$")


def preferences_file_read(name):
    if not _READ_NAME.match(name or ""):
        return False
    return "." not in name or name.rsplit(".", 1)[1] == "pref"


def parse_preferences(path, text):
    """Stanzas of a preferences file: ``{file, line_number, packages, pin, priority}``
    (``priority`` None when missing or not a number). Comments and Explanation fields skipped."""
    stanzas, fields, start = [], {}, 0

    def close():
        if fields.get("package") or fields.get("pin"):
            try:
                priority = int(fields.get("pin-priority", ""))
            except ValueError:
                priority = None
            stanzas.append({"file": path, "line_number": start, "packages": fields.get("package", "").split(),
                            "pin": fields.get("pin", "").strip(), "priority": priority})

    for number, line in enumerate((text or "").splitlines(), 1):
        if line.lstrip().startswith("#"):
            continue
        if not line.strip():
            close()
            fields = {}
            continue
        key, sep, value = line.partition(":")
        if sep and line[0] not in " \t":
            if not fields:
                start = number
            fields[key.strip().lower()] = value.strip()
    close()
    return stanzas


def _name_matches(pattern, name):
    """apt's package-name match: /regex/ (extended, case-insensitive), fnmatch glob, or the name."""
    if len(pattern) > 1 and pattern.startswith("/") and pattern.endswith("/"):
        try:
            return re.search(pattern[1:-1], name, re.IGNORECASE) is not None
        except re.error:
            return False
    if any(c in pattern for c in "*?["):
        return fnmatch.fnmatchcase(name.lower(), pattern.lower())
    return pattern.lower() == name.lower()


def stanza_applies(stanza, package):
    """Whether a stanza's Package field names ``package`` (``*`` names every package; ``src:``
    patterns name source packages, which this cannot resolve, so they never match here)."""
    name = package.split(":", 1)[0]
    return any(p == "*" or (not p.startswith("src:") and _name_matches(p, name)) for p in stanza["packages"])


def version_pin_matches(stanza, version):
    """True/False for a ``Pin: version X`` stanza (exact, X* prefix, glob or /regex/ as apt
    matches versions); None for release and origin pins (they depend on the repository's data)."""
    kind, dummy, value = stanza["pin"].partition(" ")
    if kind.lower() != "version":
        return None
    value = value.strip()
    if len(value) > 1 and value.startswith("/") and value.endswith("/"):
        try:
            return re.search(value[1:-1], version) is not None
        except re.error:
            return False
    if value.endswith("*") and not any(c in value[:-1] for c in "*?["):
        return version.startswith(value[:-1])
    if any(c in value for c in "*?["):
        return fnmatch.fnmatchcase(version, value)
    return value == version


# ---------------------------------------------------------------------------------------------
# The decision
# ---------------------------------------------------------------------------------------------

def _holders(stanzas, package, versions, owned_file):
    """Stanzas outside ``owned_file`` that name ``package`` and pin one of ``versions`` (or pin
    by release/origin, which may)."""
    out = []
    for stanza in stanzas:
        if stanza["file"] == owned_file or not stanza_applies(stanza, package):
            continue
        matches = [version_pin_matches(stanza, v) for v in versions if v]
        if any(m is None or m for m in matches):
            out.append(stanza)
    return out


def _status(info, wanted):
    if info is None:
        return "unknown"
    if info["installed"] == wanted:
        return "installed"
    if wanted not in repository_versions(info):
        return "missing"
    if info["candidate"] == wanted:
        return "ok"
    return "not_candidate"


def check_pins(policy, wanted, stanzas, owned_file):
    """One result per ``package: version`` of ``wanted`` (in its order): ``status`` is
    ``installed`` (nothing to do), ``ok`` (apt's candidate is the version), ``missing`` (no
    repository offers it), ``unknown`` (apt knows no such package) or ``not_candidate`` (the
    pins make another version the candidate: apt would refuse the install); ``holders`` are the
    stanzas of other files that decide it."""
    results = []
    for package, version in wanted.items():
        info = policy.get(package)
        status = _status(info, version)
        candidate = (info or {}).get("candidate")
        result = {
            "package": package, "wanted": version, "status": status, "ok": status in ("installed", "ok"),
            "installed": (info or {}).get("installed"), "candidate": candidate,
            "candidate_priority": version_priority(info, candidate),
            "wanted_priority": version_priority(info, version),
            "repository_versions": repository_versions(info),
            "holders": _holders(stanzas, package, [candidate, version], owned_file) if status == "not_candidate" else [],
        }
        result["message"] = describe(result)
        results.append(result)
    return results


def describe_stanza(stanza):
    return "%s:%s (Package: %s; Pin: %s; Pin-Priority: %s)" % (
        stanza["file"], stanza["line_number"], " ".join(stanza["packages"]), stanza["pin"],
        "?" if stanza["priority"] is None else stanza["priority"])


def describe(result):
    """One sentence for a result (no host, no variable names: the caller adds them)."""
    package, wanted = result["package"], result["wanted"]
    status = result["status"]
    if status == "installed":
        return "%s %s is installed." % (package, wanted)
    if status == "ok":
        return "apt would install %s %s (its candidate, priority %s)." % (package, wanted, result["candidate_priority"])
    if status == "unknown":
        return "apt knows no package %s in the repository." % package
    if status == "missing":
        return "%s %s is not in the repository; versions there: %s." % (
            package, wanted, ", ".join(result["repository_versions"]) or "none")
    holders = result["holders"]
    why = ("decided by %s" % ", ".join(describe_stanza(s) for s in holders) if holders
           else "no other pin file names %s (see apt-cache policy %s)" % (package, package))
    return ("with the apt pins this host would have, apt's candidate for %s is %s (priority %s), not %s "
            "(priority %s), so apt would refuse to install it (\"no available installation candidate\"); %s."
            % (package, result["candidate"] or "none", result["candidate_priority"], wanted,
               result["wanted_priority"], why))


def apt_errors(text):
    """apt's error lines (``E: ...``), each once, in order."""
    seen = []
    for line in (text or "").splitlines():
        line = line.strip()
        if line.startswith("E: ") and line not in seen:
            seen.append(line)
    return seen
