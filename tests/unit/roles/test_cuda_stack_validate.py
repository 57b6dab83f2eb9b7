# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""cuda_stack refuses bad settings in its validation (site.yml play 1, before anything changes).

The role's real tasks (roles/cuda_stack/tasks/validate.yml) run through ansible-playbook in check
mode against localhost, once for all cases. Every case points the signing key at a path that does
not exist: a case whose settings pass reaches that first host probe and fails there (PROBE). The
probes themselves (key, other repository definitions, apt's candidate under the effective pins)
run on the simulated host: molecule scenario cuda_stack."""

import pytest

from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import run_harness

KEY = "/nonexistent/gpu-fleet-test.asc"
PROBE = "cannot read the signing key %s" % KEY
BASE = {"cuda_stack_apt_repo_url": "file:///srv/mirror", "cuda_stack_apt_signing_key": KEY}
SHA = "0123456789abcdef" * 4
SPEC = "Validation of arguments failed:\n"

CASES = {
    "defaults": ({}, PROBE),
    "explicit_build": ({"cuda_stack_nccl_build": "2.14.3-1+cuda11.0"}, PROBE),
    "newer_release": ({"cuda_stack_nccl_version": "2.18.3"}, PROBE),
    "toolkit_version": ({"cuda_stack_cuda_package_version": "12.1.0-1"}, PROBE),
    "fingerprint_spaced": ({"cuda_stack_apt_key_fingerprints": ["0xEB69 3B30 35CD 5710 E231  E123 A4B4 6996 3BF8 63CC"]}, PROBE),
    "old_driver_accepted": ({"gpu_topology": {"driver_version": "525.60.13"}, "cuda_stack_driver_check": False}, PROBE),
    "tarball_complete": ({"cuda_stack_nccl_install_method": "tarball", "cuda_stack_nccl_tarball_url": "file:///srv/n.txz",
                          "cuda_stack_nccl_tarball_sha256": SHA}, PROBE),
    "absent_checks_only_the_state": ({"cuda_stack_state": "absent", "cuda_stack_cuda_version": "12.4"}, "accepted"),
    # Choices are the argument spec's (entry point validate): Ansible refuses them before the tasks.
    "state": ({"cuda_stack_state": "presnt"}, SPEC + "value of cuda_stack_state must be one of: present, absent, got: presnt"),
    "method": ({"cuda_stack_nccl_install_method": "pip"}, SPEC + "value of cuda_stack_nccl_install_method must be one of: apt, tarball"),
    "foreign": ({"cuda_stack_foreign_repo_entries": "ignore"}, SPEC + "value of cuda_stack_foreign_repo_entries must be one of: remove, fail"),
    "cuda_unknown": ({"cuda_stack_cuda_version": "12.4"},
                     'cuda_stack_cuda_version is "12.4": it is not in the collection\'s compatibility table'),
    "toolkit_other_release": ({"cuda_stack_cuda_package_version": "12.4.1-1"},
                              'cuda_stack_cuda_package_version is "12.4.1-1": it is not a version of cuda-toolkit-12-1'),
    "nccl_version": ({"cuda_stack_nccl_version": "2.14"}, 'cuda_stack_nccl_version is "2.14": it must be an NCCL release'),
    # a regex "$" matches before a trailing newline: every check ends in \Z
    "nccl_version_newline": ({"cuda_stack_nccl_version": "2.14.3\n"}, 'cuda_stack_nccl_version is "2.14.3\\n": it must be an NCCL release'),
    "repo_url_newline": ({"cuda_stack_apt_repo_url": "file:///srv/mirror\n"}, 'cuda_stack_apt_repo_url is "file:///srv/mirror\\n": it must be an https://'),
    "tarball_prefix_newline": ({"cuda_stack_nccl_install_method": "tarball", "cuda_stack_nccl_tarball_url": "file:///srv/n.txz",
                                "cuda_stack_nccl_tarball_sha256": SHA, "cuda_stack_nccl_prefix": "/opt/nccl\n"},
                               "an absolute cuda_stack_nccl_prefix that is not a system directory"),
    "build_other_release": ({"cuda_stack_nccl_build": "2.18.3-1+cuda12.1"},
                            'cuda_stack_nccl_build is "2.18.3-1+cuda12.1": it is not a build of NCCL 2.14.3'),
    "build_malformed": ({"cuda_stack_nccl_build": "2.14.3+cuda11.7"},
                        'cuda_stack_nccl_build is "2.14.3+cuda11.7": it is not a build of NCCL 2.14.3'),
    "nccl_not_in_table": ({"cuda_stack_nccl_version": "2.16.5"},
                          'cuda_stack_nccl_version is "2.16.5": no NCCL build of it is known for CUDA 12.1'),
    "driver_old": ({"gpu_topology": {"driver_version": "525.60.13"}},
                   'cuda_stack_cuda_version is "12.1": NVIDIA driver 525.60.13 cannot run it'),
    "driver_unknown": ({"gpu_topology": {}}, "NVIDIA driver not found cannot run it"),
    "repo_url": ({"cuda_stack_apt_repo_url": "developer.download.nvidia.com/compute/cuda/repos"},
                 'cuda_stack_apt_repo_url is "developer.download.nvidia.com/compute/cuda/repos": it must be an https://'),
    "distro_not_served": ({"cuda_stack_apt_repo_url": "https://developer.download.nvidia.com/compute/cuda/repos",
                           "cuda_stack_repo_distro": "debian12"}, "NVIDIA's repository has no CUDA 12.1 for debian12"),
    "signing_key": ({"cuda_stack_apt_signing_key": "3bf863cc.pub"},
                    'cuda_stack_apt_signing_key is "3bf863cc.pub": it must be empty'),
    "fingerprints_empty": ({"cuda_stack_apt_key_fingerprints": []},
                           "cuda_stack_apt_key_fingerprints is []: it is empty, so no key would be accepted"),
    "fingerprint_short": ({"cuda_stack_apt_key_fingerprints": ["3bf863cc"]},
                          "not a fingerprint (40 or 64 hex digits): 3bf863cc"),
    "tarball_prefix_system_dir": ({"cuda_stack_nccl_install_method": "tarball", "cuda_stack_nccl_tarball_url": "file:///srv/n.txz",
                                   "cuda_stack_nccl_tarball_sha256": SHA, "cuda_stack_nccl_prefix": "/usr/local"},
                                  "an absolute cuda_stack_nccl_prefix that is not a system directory"),
    "tarball_incomplete": ({"cuda_stack_nccl_install_method": "tarball"},
                           "cuda_stack_nccl_install_method is tarball: it needs cuda_stack_nccl_tarball_url"),
}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    cases = [{"id": k, "vars": dict(BASE, **v[0])} for k, v in CASES.items()]
    return run_harness(tmp_path_factory.mktemp("validate"), "cuda_stack_validate.yml", cases)


@pytest.mark.parametrize("case", sorted(CASES))
def test_cuda_stack_settings(results, case):
    expected = CASES[case][1]
    got = results[case]
    if expected in ("accepted", PROBE):
        assert got == expected or (expected == PROBE and PROBE in got), got
    elif expected.startswith(SPEC):
        assert got.startswith(SPEC) and expected[len(SPEC):] in got, got
    else:
        assert got.startswith("host localhost: ") and expected in got, got
        assert got.endswith("Nothing was changed."), got
