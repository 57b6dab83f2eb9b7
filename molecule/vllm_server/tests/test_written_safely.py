# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Files a daemon parses are validated before they replace the live ones, and the API key never
reaches the output (issue 16). Runs last (file name order): each test drives
playbooks/rollback.yml against the host converge.yml left serving the full layout.

* nginx refuses the endpoint's file as rendered (an address nginx cannot parse in
  vllm_server_metrics_allow): the run fails naming nginx's words, the live file and nginx are
  as before, the endpoint answers.
* systemd refuses the instance units as rendered (their program not executable on the host while
  the units change, vllm_server_numa_binding none): the run fails naming systemd's words, the
  installed units, the environment files and the running instances are as before.
* at -vvv with --diff, with the API key file drifted (so the key is compared and written), neither
  the key nor any hex digest of the file or of the key is in the output.
Nothing here calls the collection's own code; expected values are the scenario's own settings."""
import hashlib

from testinfra_helpers import extra_vars, http, run_playbook

KEY = "s6-molecule-api-key-8c1d"
KEY_FILE = "/etc/vllm/api-key.env"
VLLM = "/opt/vllm/venv/bin/python"  # the units' program (the role's default vllm_server_venv, gpu_fleet_venv)
NGINX_FILE = "/etc/nginx/conf.d/gpu-fleet-vllm.conf"
UNITS = ["/etc/systemd/system/vllm@.service", "/etc/systemd/system/vllm-degraded@.service"]
ENV_FILES = ["/etc/vllm/%s.env" % n for n in ("n0-0", "n0-1", "n1-0", "n1-1")]
# converge.yml's layout and security options, with which the plan is made again
CONVERGED = {
    "gpu_fleet_rollback_to": "full", "vllm_server_api_key": KEY, "vllm_server_device_policy": "closed",
    "vllm_server_listen_address": "0.0.0.0",
    "vllm_server_layout": [{"gpus": [0, 1], "tensor_parallel_size": 2}, {"gpus": [2]}, {"gpus": [3]},
                           {"gpus": [4, 5], "tensor_parallel_size": 2}],
}


def _refused(extra):
    """rollback.yml with EXTRA over the converged options; its output as one line of words, the
    results in the JSON format (one line per result), their quotes unescaped."""
    proc = run_playbook("playbooks/rollback.yml", *extra_vars(CONVERGED, extra),
                        env={"ANSIBLE_CALLBACK_RESULT_FORMAT": "json"})
    return proc.returncode, " ".join(proc.stdout.replace('\\"', '"').split())


def _sha256(host, path):
    return host.check_output("sha256sum %s" % path).split()[0]


def _main_pids(host):
    return host.check_output("systemctl show -p MainPID --value vllm@n0-0 vllm@n0-1 vllm@n1-0 vllm@n1-1").split()


def test_refused_nginx_config_is_not_written(host):
    before = _sha256(host, NGINX_FILE)
    rc, out = _refused({"vllm_server_metrics_allow": ["10.0.0.0/33"]})
    assert rc != 0, out
    assert "gpu-fleet-nginx-check: nginx refuses the configuration with the new %s" % NGINX_FILE in out, out
    assert 'invalid parameter "10.0.0.0/33" in %s' % NGINX_FILE in out, out
    assert _sha256(host, NGINX_FILE) == before
    assert "10.0.0.0/33" not in host.file(NGINX_FILE).content_string
    assert host.run("nginx -t").rc == 0
    assert http(host, "http://127.0.0.1:8000/health")["status"] == 200


def test_refused_unit_is_not_written(host):
    # Every value that reaches a unit is refused in the plan play already (validate_values.j2);
    # what systemd still refuses is the host's state: here the ExecStart= program is not executable
    # while a changed unit is written (without numactl binding ExecStart= runs the venv's python,
    # a link to the system's: it is set aside for a plain non-executable file, never chmod-ed).
    units = {p: _sha256(host, p) for p in UNITS + ENV_FILES}
    pids = _main_pids(host)
    host.check_output("mv %s %s.keep && install -m 0644 /dev/null %s" % (VLLM, VLLM, VLLM))
    try:
        rc, out = _refused({"vllm_server_numa_binding": "none"})
    finally:
        host.check_output("mv -f %s.keep %s" % (VLLM, VLLM))
    assert rc != 0, out
    assert "gpu-fleet-unit-verify: systemd refuses vllm@.service as rendered" in out, out
    assert "Command %s is not executable: Permission denied" % VLLM in out, out
    assert {p: _sha256(host, p) for p in UNITS + ENV_FILES} == units
    assert ("ExecStart=/usr/bin/numactl $VLLM_NUMACTL_ARGS %s -m vllm.entrypoints.openai.api_server" % VLLM
            in host.file(UNITS[0]).content_string)
    assert _main_pids(host) == pids


def test_api_key_and_its_digests_never_in_the_output(host):
    """The drift makes the one-call comparison find the key file and the copy task write it (with
    its mode back), so every task that handles the key runs, at the highest verbosity."""
    host.check_output("chmod 0600 %s" % KEY_FILE)
    proc = run_playbook("playbooks/rollback.yml", *extra_vars(CONVERGED), "-vvv", "--diff")
    out = proc.stdout
    assert proc.returncode == 0, out[-6000:]
    key_file = host.file(KEY_FILE)
    assert (key_file.user, key_file.group, key_file.mode) == ("root", "vllm", 0o640)
    content = ("VLLM_API_KEY=%s\n" % KEY).encode()
    assert key_file.content == content
    # the key task ran (its result hidden)
    assert "TASK [gpu_fleet.vllm_serving.vllm_server : Write the API key file" in out, out[-6000:]
    secrets = {"key": KEY}
    for name in ("md5", "sha1", "sha224", "sha256", "sha384", "sha512"):
        secrets["%s of the file" % name] = hashlib.new(name, content).hexdigest()
        secrets["%s of the key" % name] = hashlib.new(name, KEY.encode()).hexdigest()
    found = sorted(name for name, value in secrets.items() if value.lower() in out.lower())
    assert found == [], found
