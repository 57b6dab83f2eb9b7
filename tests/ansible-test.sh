#!/usr/bin/env bash
# Run ansible-test (sanity|units) on a copy of the working tree at
# .build/ansible-test/ansible_collections/gpu_fleet/vllm_serving (ansible-test rejects a symlinked
# path and lists files through git, so the copy is a throw-away git repository).
set -euo pipefail
cmd="${1:?usage: $0 sanity|units}"
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/.venv/bin"
dest="$root/.build/ansible-test/ansible_collections/gpu_fleet/vllm_serving"

rm -rf "$dest"
mkdir -p "$dest"
(cd "$root" && git ls-files -z --cached --others --exclude-standard | xargs -0 -I{} sh -c 'test -e "{}" && printf "%s\0" "{}"' | tar --null -T - -cf -) | tar -C "$dest" -xf -
(cd "$dest" && git init -q && git add -A && git -c user.name=ci -c user.email=ci@localhost commit -qm snapshot)

# ansible-test drops PIP_CERT/SSL_CERT_FILE from the environment of the pip it runs; on machines
# whose package traffic needs a site CA bundle, give it to pip through its config file.
if [ -n "${PIP_CERT:-}" ] && ! grep -qs "cert = ${PIP_CERT}" /etc/pip.conf; then
  printf '[global]\ncert = %s\n' "$PIP_CERT" >> /etc/pip.conf
fi

run() {
  cd "$dest"
  case "$cmd" in
    # no-illegal-filenames: the simulator's sysfs trees use real PCI device names
    # (0000:17:00.0); ':' is illegal only on Windows, which is no Ansible controller or target
    # of this collection (and the test crashes on such paths instead of reporting them).
    sanity) "$bin/ansible-test" sanity --venv --python 3.11 --color no --exclude tests/fixtures/ \
              --skip-test no-illegal-filenames ;;
    units)  "$bin/ansible-test" units --venv --python 3.11 --color no ;;
    *) echo "unknown command $cmd" >&2; exit 2 ;;
  esac
}

log="$root/.build/ansible-test-$cmd.log"
if run 2>&1 | tee "$log"; then exit 0; fi
# Where ansible-test cannot download its pip bootstrap script it names the path to save it to;
# a stand-in that bootstraps pip from the interpreter's own ensurepip works the same way.
cache=$(grep -o 'saved to:\? *[^ ]*get_pip[^ ]*\.py' "$log" | head -1 | sed 's/^saved to:\? *//') || true
if [ -n "$cache" ] && [ ! -s "$cache" ]; then
  echo "ansible-test: pip bootstrap download failed; using ensurepip stand-in at $cache"
  mkdir -p "$(dirname "$cache")"
  cp "$root/tests/get_pip_standin.py" "$cache"
  run
else
  exit 1
fi
