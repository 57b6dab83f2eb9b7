# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Raw host state after cuda_stack on a simulated host, then the other cases driven with
ansible-playbook against the same host, in this order (pytest keeps file order):

converged state -> facts -> --check -> refusals that must leave the host untouched (missing build, a
site pin file holding another build, a second repository definition in site.yml's first play,
wrong key, foreign entry with mode fail, bad tarball) -> upgrade and downgrade -> tarball method
(install, upgrade, rollback) -> state=absent.

Assertions read dpkg, apt, files and the linker cache directly; expected versions come from the
stand-in repository's contents (tests/simulator/packages/README.md), not from the role.
"""
import json
import os
import shlex

import pytest
from testinfra_helpers import extra_vars, recap as host_recap, run_playbook

HOST = "i4-cuda-stack"
PINNED = "2.14.3-1+cuda11.7"
NEWER = "2.18.3-1+cuda12.1"
REPO = "file:///srv/gpu-sim/cuda-repo/debian11/x86_64/"
KEYRING = "/etc/apt/keyrings/gpu-fleet-cuda.asc"
PINS = "/etc/apt/preferences.d/gpu-fleet-cuda-pins.pref"
LIBDIR = "/usr/lib/x86_64-linux-gnu"
TARBALLS = "/srv/gpu-sim/nccl-tarballs"
PACKAGES = ["cuda-toolkit-12-1", "libnccl2", "libnccl-dev"]
RECORD = "/etc/ansible/facts.d/gpu_fleet_cuda_stack.fact"
if os.environ.get("MOLECULE_PROJECT_DIRECTORY"):  # host.ansible() runs the collection's module
    os.environ.setdefault("ANSIBLE_COLLECTIONS_PATH", os.path.join(os.environ["MOLECULE_PROJECT_DIRECTORY"], ".build", "ac"))


def playbook(*extra, check=False, name="converge.yml"):
    """converge.yml (the role), or validate.yml (its checks as site.yml's first play runs them)."""
    args = extra_vars(*extra) + (["--check", "--diff"] if check else [])
    proc = run_playbook("molecule/cuda_stack/" + name, *args, env={"ANSIBLE_CALLBACK_RESULT_FORMAT": "json"})
    return proc.returncode, proc.stdout


def recap(out):
    return host_recap(out, HOST)


def snapshot(host):
    """What a refused run must not touch: apt sources, keyring, pins, dpkg state, tarball tree."""
    return host.check_output(
        "stat -c '%n %Y %s' /etc/apt/sources.list /etc/apt/sources.list.d/* /etc/apt/keyrings/* "
        "/etc/apt/preferences.d/* /etc/ld.so.conf.d/* /etc/ansible/facts.d/* 2>/dev/null; "
        "dpkg-query -W -f='${Package} ${Version} ${Status}\\n' " + " ".join(PACKAGES + ["xz-utils"]) + " 2>&1; "
        "ls -la --time-style=+%s /opt/nccl 2>/dev/null || true")


def selection(host, package):
    return host.check_output("dpkg-query -W -f='${Version} ${Status}' %s" % package)


def sha256(host, name):
    for line in host.file(TARBALLS + "/SHA256SUMS").content_string.splitlines():
        digest, filename = line.split()
        if filename == name:
            return digest
    pytest.fail("%s not in SHA256SUMS" % name)


def tarball_vars(host, build):
    name = "nccl_%s_x86_64.txz" % build
    return {"cuda_stack_nccl_install_method": "tarball", "cuda_stack_nccl_build": build,
            "cuda_stack_nccl_version": build.split("-")[0],
            "cuda_stack_nccl_tarball_url": "file://%s/%s" % (TARBALLS, name),
            "cuda_stack_nccl_tarball_sha256": sha256(host, name)}


def recorded(host):
    """The role's record of what it applied (local fact)."""
    f = host.file(RECORD)
    assert f.exists and f.user == "root" and f.mode == 0o644
    return json.loads(f.content_string)


def first_ldconfig_nccl(host):
    """The file the linker resolves libnccl.so.2 to (first entry of the cache, links resolved)."""
    lines = [l for l in host.check_output("ldconfig -p").splitlines() if l.strip().startswith("libnccl.so.2 ")]
    return host.check_output("readlink -f %s" % lines[0].split("=>")[1].strip())


# --- converged state ------------------------------------------------------------------------------

@pytest.mark.parametrize("package,version", [("cuda-toolkit-12-1", "12.1.1-1"), ("libnccl2", PINNED), ("libnccl-dev", PINNED)])
def test_pinned_and_held(host, package, version):
    assert selection(host, package) == "%s hold ok installed" % version
    assert "Package: %s\nPin: version %s\nPin-Priority: 1001" % (package, version) in host.file(PINS).content_string
    assert "Candidate: %s" % version in host.check_output("apt-cache policy %s" % package)


def test_upgrade_would_not_move_them(host):
    assert NEWER in host.check_output("apt-cache madison libnccl2")
    for command in ("apt-get -s upgrade", "apt-get -s dist-upgrade"):
        sim = host.run(command)
        assert sim.rc == 0, sim.stderr
        inst = [l for l in sim.stdout.splitlines() if l.startswith(("Inst", "Remv"))]
        assert not [l for l in inst if l.split()[1] in PACKAGES], inst


def test_checked_key_is_the_repositorys_and_apt_reads_the_sources(host):
    assert host.file(KEYRING).content_string == host.file("/srv/gpu-sim/cuda-repo/gpu-sim-archive.asc").content_string
    sources = host.file("/etc/apt/sources.list.d/cuda.sources").content_string
    assert "URIs: %s" % REPO in sources and "Signed-By: %s" % KEYRING in sources
    update = host.run("apt-get update")
    assert update.rc == 0 and "Conflicting" not in update.stdout + update.stderr, update.stderr


def test_foreign_definitions_removed_with_copies_kept(host):
    assert not host.file("/etc/apt/sources.list.d/cuda-debian11-x86_64.list").exists
    main = host.file("/etc/apt/sources.list").content_string
    assert "gpu-sim/cuda-repo" not in main and " bullseye main" in main  # the mirror line stays
    copy = host.file("/var/backups/gpu-fleet-apt-sources/cuda-debian11-x86_64.list").content_string
    assert copy.startswith("deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] file:///srv/gpu-sim/cuda-repo/")
    assert "deb file:///srv/gpu-sim/cuda-repo/debian11/x86_64 /" in \
        host.file("/var/backups/gpu-fleet-apt-sources/sources.list").content_string
    defined = host.check_output("grep -rl 'gpu-sim/cuda-repo' /etc/apt/sources.list /etc/apt/sources.list.d/ || true")
    assert defined.split() == ["/etc/apt/sources.list.d/cuda.sources"]


def test_nccl_facts(host):
    """System NCCL from the linker cache, a torch-style bundle in a venv, and two vLLM env files."""
    venv_lib = "/opt/i4-venv/lib/python3.9/site-packages/nvidia/nccl/lib"
    # python3's tarfile: the bare image has no xz (the role installs xz-utils only for the tarball method)
    extract = ("import sys, tarfile; t = tarfile.open(sys.argv[1]); "
               "sys.stdout.buffer.write(t.extractfile(sys.argv[2]).read())")
    host.check_output(
        "mkdir -p {lib} /etc/vllm && python3 -c '{x}' {t}/nccl_{b}_x86_64.txz nccl_{b}_x86_64/lib/libnccl.so.2.18.3 "
        "> {lib}/libnccl.so.2 && printf 'VLLM_NCCL_SO_PATH={libdir}/libnccl.so.2\\n' > /etc/vllm/i4-a.env && "
        "printf 'CUDA_VISIBLE_DEVICES=0\\n' > /etc/vllm/i4-b.env".format(lib=venv_lib, x=extract, t=TARBALLS, b=NEWER, libdir=LIBDIR))
    try:
        res = host.ansible("gpu_fleet.vllm_serving.nccl_facts", "venvs=/opt/i4-venv,/opt/none", check=False)
    finally:
        host.check_output("rm -rf /opt/i4-venv /etc/vllm/i4-a.env /etc/vllm/i4-b.env")
    nccl = res["ansible_facts"]["nccl"]
    assert nccl["system"]["realpath"] == LIBDIR + "/libnccl.so.2.14.3"
    assert (nccl["system"]["version"], nccl["system"]["cuda"]) == ("2.14.3", "11.7")
    assert nccl["venvs"]["/opt/i4-venv"]["version"] == "2.18.3" and nccl["venvs"]["/opt/none"] is None
    assert nccl["instances"]["/etc/vllm/i4-a.env"]["uses_pinned"] is True
    assert nccl["instances"]["/etc/vllm/i4-b.env"]["uses_pinned"] is False
    assert nccl["instances"]["/etc/vllm/i4-b.env"]["effective"]["version"] == "2.18.3"


# --- check mode and refusals: nothing changes ----------------------------------------------------------

def test_check_mode_changes_nothing(host):
    before = snapshot(host)
    rc, out = playbook({"cuda_stack_nccl_version": "2.18.3"}, check=True)
    assert rc == 0, out
    assert int(recap(out)["changed"]) > 0  # it reports the upgrade it would make ...
    assert snapshot(host) == before  # ... and makes none


def test_missing_build_fails_and_leaves_the_host_untouched(host):
    before = snapshot(host)
    rc, out = playbook({"cuda_stack_nccl_build": "2.14.3-1+cuda12.1"})
    assert rc != 0
    assert "host %s: cuda_stack_nccl_build is 2.14.3-1+cuda12.1: libnccl2 2.14.3-1+cuda12.1 is not in the " \
           "repository; versions there: 2.18.3-1+cuda12.1, 2.14.3-1+cuda11.7, 2.14.3-1+cuda11.0." % HOST in out
    assert "or fix the mirror (%s). Nothing was changed." % REPO in out
    assert snapshot(host) == before


def test_site_pin_holding_the_old_build_refused_before_the_pins_change(host):
    """Issue 16: a pin file of the site holds the installed build; asked for another build, the role
    once rewrote its own pin file and then failed in apt ("no available installation candidate")."""
    site = "/etc/apt/preferences.d/00-site-nccl"
    other = "2.14.3-1+cuda11.0"
    host.check_output("printf 'Package: libnccl2 libnccl-dev\\nPin: version %s\\nPin-Priority: 1001\\n' > %s" % (PINNED, site))
    try:
        assert "Candidate: %s" % PINNED in host.check_output("apt-cache policy libnccl2")
        before, pins = snapshot(host), host.check_output("sha256sum %s" % PINS)
        for name in ("validate.yml", "converge.yml"):  # site.yml's first play, and the role alone
            rc, out = playbook({"cuda_stack_nccl_build": other}, name=name)
            assert rc != 0
            for package in ("libnccl2", "libnccl-dev"):
                assert ("host %s: cuda_stack_nccl_build is %s: with the apt pins this host would have, apt's candidate "
                        "for %s is %s (priority 1001), not %s (priority 1001)" % (HOST, other, package, PINNED, other)) in out
            assert "decided by %s:1 (Package: libnccl2 libnccl-dev; Pin: version %s; Pin-Priority: 1001)" % (site, PINNED) in out
            assert "Fix: remove %s or change its pin" % site in out and "Nothing was changed." in out
            assert host.check_output("sha256sum %s" % PINS) == pins and "Pin: version %s" % PINNED in host.file(PINS).content_string
            assert snapshot(host) == before
    finally:
        host.check_output("rm -f %s" % site)


def test_second_repository_definition_refused_in_the_first_play_naming_both_files(host):
    """Issue 16: cuda-keyring's list (another Signed-By) next to the role's cuda.sources stops every apt
    command, so housekeeping's apt task failed before cuda_stack could remove it."""
    planted = "/etc/apt/sources.list.d/cuda-debian11-x86_64.list"
    owned = "/etc/apt/sources.list.d/cuda.sources"
    host.check_output("echo 'deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] %s /' > %s" % (REPO, planted))
    try:
        broken = host.run("apt-get indextargets")
        assert broken.rc != 0 and "Conflicting values set for option Signed-By" in broken.stderr  # apt itself
        before = snapshot(host)
        rc, out = playbook(name="validate.yml")
        assert rc != 0
        assert "host %s: cuda_stack_foreign_repo_entries is remove: %s is defined in %s, not only in the role's own %s" \
               % (HOST, REPO, planted, owned) in out
        assert "%s:1 with Signed-By /usr/share/keyrings/cuda-archive-keyring.gpg; %s:1 with Signed-By %s" \
               % (planted, owned, KEYRING) in out
        assert "Fix: delete %s (the role defines the repository itself, in %s)." % (planted, owned) in out
        assert "apt says: E: Conflicting values set for option Signed-By" in out and "Nothing was changed." in out
        assert snapshot(host) == before
    finally:
        host.check_output("rm -f %s" % planted)


def test_unexpected_key_fails_before_any_change(host):
    before = snapshot(host)
    rc, out = playbook({"cuda_stack_apt_key_fingerprints": ["EB693B3035CD5710E231E123A4B469963BF863CC"]})
    assert rc != 0
    assert "host %s" % HOST in out and "EA92493EF191AB79B38906DA40ADE4451D203378" in out
    assert "Nothing was changed" in out and recap(out)["changed"] == "0"
    assert snapshot(host) == before


def test_foreign_definition_refused_in_fail_mode(host):
    planted = "/etc/apt/sources.list.d/cuda-debian11-x86_64.list"
    host.check_output("echo 'deb %s /' > %s" % (REPO, planted))
    try:
        before = snapshot(host)
        rc, out = playbook({"cuda_stack_foreign_repo_entries": "fail"})
        assert rc != 0
        assert "host %s" % HOST in out and planted in out and "cuda_stack_foreign_repo_entries=remove" in out
        assert snapshot(host) == before
    finally:
        host.check_output("rm -f %s" % planted)


def test_bad_tarball_checksum_changes_nothing(host):
    before = snapshot(host)
    wrong = dict(tarball_vars(host, PINNED), cuda_stack_nccl_tarball_sha256="0" * 64)
    rc, out = playbook(wrong)
    assert rc != 0 and "did not match" in out
    assert snapshot(host) == before


def test_recorded_what_was_applied(host):
    rec = recorded(host)
    assert rec["pins"] == {"cuda-toolkit-12-1": "12.1.1-1", "libnccl2": PINNED, "libnccl-dev": PINNED}
    assert rec["holds"] == ["cuda-toolkit-12-1", "libnccl-dev", "libnccl2"]
    assert (rec["nccl_build"], rec["nccl_release"], rec["nccl_cuda"]) == (PINNED, "2.14.3", "11.7")
    assert rec["nccl_library"] == LIBDIR + "/libnccl.so.2.14.3" == first_ldconfig_nccl(host)
    assert (rec["nccl_install_method"], rec["min_driver"], rec["pins_file"]) == ("apt", "530.30.02", PINS)


# --- upgrade and downgrade --------------------------------------------------------------------------

def test_upgrade_then_downgrade(host):
    # libnccl2's hold is made someone else's (left out of cuda_stack's record): the upgrade warns,
    # naming it, that it installs over that hold; libnccl-dev's hold is still the role's own.
    rec = recorded(host)
    assert "libnccl2" in rec["holds"] and "libnccl-dev" in rec["holds"]
    rec["holds"] = [h for h in rec["holds"] if h != "libnccl2"]
    host.check_output("printf '%%s' %s > %s" % (shlex.quote(json.dumps(rec)), RECORD))
    rc, out = playbook({"cuda_stack_nccl_version": "2.18.3"})
    assert rc == 0, out
    warning = ("WARNING host i4-cuda-stack: libnccl2 is on hold (apt-mark showhold) and cuda_stack recorded no hold of "
               "it: someone else holds it. This run installs libnccl2=%s over that hold" % NEWER)
    assert warning in " ".join(out.split()), out
    assert "libnccl-dev is on hold" not in out and "libnccl-dev, " not in out
    assert "libnccl2" in recorded(host)["holds"]   # taken over as the role's own
    for package in ("libnccl2", "libnccl-dev"):
        assert selection(host, package) == "%s hold ok installed" % NEWER
        assert "Package: %s\nPin: version %s\n" % (package, NEWER) in host.file(PINS).content_string
    assert host.file(LIBDIR + "/libnccl.so.2").linked_to == LIBDIR + "/libnccl.so.2.18.3"
    assert recorded(host)["pins"]["libnccl2"] == NEWER and recorded(host)["nccl_cuda"] == "12.1"
    rc, out = playbook()
    assert rc == 0, out
    for package in ("libnccl2", "libnccl-dev"):
        assert selection(host, package) == "%s hold ok installed" % PINNED
    assert NEWER not in host.file(PINS).content_string
    assert host.file(LIBDIR + "/libnccl.so.2").linked_to == LIBDIR + "/libnccl.so.2.14.3"
    assert recorded(host)["pins"]["libnccl2"] == PINNED


# --- tarball method ------------------------------------------------------------------------------

def test_tarball_install_upgrade_and_rollback(host):
    rc, out = playbook(tarball_vars(host, PINNED))
    assert rc == 0, out
    assert host.file("/opt/nccl/current").linked_to == "/opt/nccl/%s" % PINNED
    assert host.file("/opt/nccl/%s/lib/libnccl.so.2" % PINNED).linked_to == "/opt/nccl/%s/lib/libnccl.so.2.14.3" % PINNED
    assert host.file("/etc/ld.so.conf.d/gpu-fleet-nccl.conf").contains("^/opt/nccl/current/lib$")
    assert first_ldconfig_nccl(host) == "/opt/nccl/%s/lib/libnccl.so.2.14.3" % PINNED
    assert "NCCL version 2.14.3+cuda11.7" in host.check_output("grep -a -o 'NCCL version [^ ]*' /opt/nccl/current/lib/libnccl.so.2")
    rec = recorded(host)   # a tarball NCCL is no apt pin: only the toolkit is pinned and held
    assert rec["nccl_install_method"] == "tarball" and rec["pins"] == {"cuda-toolkit-12-1": "12.1.1-1"}
    assert rec["nccl_library"] == "/opt/nccl/%s/lib/libnccl.so.2.14.3" % PINNED

    rc, out = playbook(tarball_vars(host, NEWER))
    assert rc == 0, out
    assert host.file("/opt/nccl/current").linked_to == "/opt/nccl/%s" % NEWER
    assert host.file("/opt/nccl/%s/lib/libnccl.so.2.14.3" % PINNED).exists  # kept for rollback
    assert "2.18.3+cuda12.1" in host.check_output("grep -a -o 'NCCL version [^ ]*' /opt/nccl/current/lib/libnccl.so.2")

    marker = "stat -c '%%i %%Y' /opt/nccl/%s /opt/nccl/%s/.gpu-fleet-sha256" % (PINNED, PINNED)
    kept = host.check_output(marker)
    rc, out = playbook(tarball_vars(host, PINNED))
    assert rc == 0, out
    assert host.check_output(marker) == kept  # rollback: the kept build is reused, not unpacked again
    assert host.file("/opt/nccl/current").linked_to == "/opt/nccl/%s" % PINNED

    rc, out = playbook(tarball_vars(host, PINNED))
    assert rc == 0 and recap(out)["changed"] == "0", out


def test_tarball_of_another_build_refused(host):
    before = snapshot(host)
    wrong = dict(tarball_vars(host, NEWER), cuda_stack_nccl_build="2.14.3-1+cuda11.0", cuda_stack_nccl_version="2.14.3")
    rc, out = playbook(wrong)
    assert rc != 0
    assert "host %s" % HOST in out and "holds NCCL 2.18.3+cuda12.1, not the pinned 2.14.3-1+cuda11.0" in out
    assert snapshot(host) == before


# --- state=absent ------------------------------------------------------------------------------------

def test_state_absent_removes_holds_and_pins(host):
    rc, out = playbook({"cuda_stack_state": "absent"})
    assert rc == 0, out
    for package in PACKAGES:
        assert selection(host, package).endswith(" install ok installed")  # installed, no longer held
    assert not host.file(PINS).exists
    assert not host.file("/etc/ld.so.conf.d/gpu-fleet-nccl.conf").exists
    assert first_ldconfig_nccl(host) == LIBDIR + "/libnccl.so.2.14.3"
    assert not host.file(RECORD).exists   # nothing pinned any more: nothing recorded
    sim = host.run("apt-get -s upgrade").stdout
    assert "Inst libnccl2 [%s] (%s" % (PINNED, NEWER) in sim  # nothing holds it any more
    rc, out = playbook({"cuda_stack_state": "absent"})
    assert rc == 0 and recap(out)["changed"] == "0", out
