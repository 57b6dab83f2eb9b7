#!/usr/bin/env bash
# Cold-time ledger of the CI stages: runs what `make test` runs, one stage at a time, in this
# checkout, and prints (and appends to FILE, default .build/ci-stages.tsv) one line per stage:
# stage, wall seconds, exit status, end time. Logs: .build/ci-stages/<stage>.log.
# For a cold figure run it on a fresh clone with no simulated-host image (podman rmi) and no
# pip/ansible-test/molecule caches; docs/performance.md records the figures ("CI budget ledger").
#
#   bash benchmarks/ci_stages.sh [FILE]
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-.build/ci-stages.tsv}"
mkdir -p .build/ci-stages "$(dirname "$out")"
scenarios=$(make -pn -f Makefile help 2>/dev/null | sed -n 's/^SCENARIOS := //p' | head -1)
failed=0
stage() {
  local name="$1" t0 rc
  shift
  t0=$(date +%s.%N)
  "$@" >".build/ci-stages/$name.log" 2>&1
  rc=$?
  printf '%s\t%.1f\t%s\t%s\n' "$name" "$(awk -v a="$t0" -v b="$(date +%s.%N)" "BEGIN{print b-a}")" "$rc" "$(date -u +%H:%M:%S)" | tee -a "$out"
  [ "$rc" = 0 ] || failed=1
}
stage setup make setup
stage lint make lint
stage sanity make sanity
stage units make units
stage galaxy make galaxy
stage image env CONTAINERS_CONF="$PWD/tests/simulator/containers.conf" bash tests/simulator/image/build-image.sh
stage packages env PATH="$PWD/.venv/bin:$PATH" bash tests/simulator/packages/build-all.sh
for s in $scenarios; do
  stage "molecule-$s" make "molecule-$s"
done
exit "$failed"
