#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Build the wheels of the STAND-IN vLLM (tests/simulator/vllm_standin, TEST ONLY, not the real vLLM)
# and of its STAND-IN torch (tests/simulator/torch_standin: version facts only, not PyTorch) into
# tests/simulator/build/wheelhouse/:
#
#   tests/simulator/packages/build-wheel.sh [--force]
#
# Output: tests/simulator/build/wheelhouse/vllm-0.6.3.post1+gpusim-py3-none-any.whl and
# torch-2.4.0+gpusim-py3-none-any.whl (the only files there; the stand-in vLLM pins torch==2.4.0,
# as the real 0.6.3.post1 wheel does, and the torch wheel is written with zipfile, no backend).
# `pip install --no-index --find-links <wheelhouse> vllm==0.6.3.post1` installs both: the
# local label "+gpusim" marks it, PEP 440 lets `==0.6.3.post1` match it.
#
# Build: `python3 -m pip wheel --no-deps` on a copy of the source (setuptools would otherwise write
# build/ and *.egg-info into the source tree). The build backend (setuptools) comes from, in order:
#   1. the Python itself when it has setuptools >= 61 and a bdist_wheel (setuptools >= 70.1, or the
#      `wheel` package): --no-build-isolation --no-index, fully offline (Debian 12's /usr/bin/python3
#      with python3-setuptools and python3-wheel is such a Python);
#   2. tests/simulator/build/packages-work/build-deps/ (wheels of setuptools and wheel) with
#      --no-index: offline, after step 3 ran once;
#   3. otherwise `pip download` of setuptools>=61,<70 and wheel from the package index into that
#      folder, then step 2. (setuptools < 70 writes Metadata-Version 2.1, which Debian 11's pip 20.3
#      reads without complaint.)
# The Python is $PYTHON, else /usr/bin/python3, else python3. When it has no pip and this runs as
# root, python3-pip, python3-setuptools and python3-wheel are installed with apt-get.
#
# Cache: a sha256 over this script and every file of vllm_standin/ (bytecode and build residue
# excluded) is kept in packages-work/wheel.inputs; when it matches and the wheel is there, nothing
# is rebuilt. --force rebuilds anyway. The wheel is checked after each build: name, version,
# console script `vllm = vllm.scripts:main`, and that it runs (`vllm --version` from the wheel).
set -euo pipefail
umask 022

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
sim_dir="$(cd "${here}/.." && pwd)"
build_dir="${GPU_SIM_BUILD_DIR:-${sim_dir}/build}"
src="${sim_dir}/vllm_standin"
out="${build_dir}/wheelhouse"
work="${build_dir}/packages-work"
deps="${work}/build-deps"
stamp="${work}/wheel.inputs"
version="0.6.3.post1+gpusim"
wheel_name="vllm-${version}-py3-none-any.whl"
torch_version="2.4.0+gpusim"
torch_wheel="torch-${torch_version}-py3-none-any.whl"
# wheel/setuptools honour it for the timestamps inside the zip: 2023-06-01T00:00:00Z
export SOURCE_DATE_EPOCH=1685577600
export LC_ALL=C
export PIP_DISABLE_PIP_VERSION_CHECK=1

force=0
for arg in "$@"; do
    case "${arg}" in
        --force) force=1 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) printf 'usage: %s [--force]\n' "$0" >&2; exit 2 ;;
    esac
done

log() { printf '[build-wheel] %s\n' "$*" >&2; }
die() { printf '[build-wheel] ERROR: %s\n' "$*" >&2; exit 1; }

start=$(date +%s.%N)
elapsed() { awk -v s="${start}" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }'; }

[ -f "${src}/pyproject.toml" ] || die "no ${src}/pyproject.toml"

# --- cache ---------------------------------------------------------------------------------------
source_files() {
    (cd "${sim_dir}" && find vllm_standin torch_standin -type f ! -path '*/__pycache__/*' ! -name '*.py[co]' \
        ! -path '*.egg-info/*' ! -path 'vllm_standin/build/*' ! -path 'vllm_standin/dist/*' -print0 |
        sort -z)
}
inputs="$(
    { (cd "${sim_dir}" && source_files | xargs -0 sha256sum)
      (cd "${here}" && sha256sum build-wheel.sh); } | sha256sum | cut -d' ' -f1
)"
if [ "${force}" = 0 ] && [ -f "${stamp}" ] && [ "$(cat "${stamp}")" = "${inputs}" ] &&
    [ -s "${out}/${wheel_name}" ] && [ -s "${out}/${torch_wheel}" ]; then
    log "up to date (inputs unchanged): ${out}/${wheel_name} [$(elapsed) s]"
    exit 0
fi
rm -f "${stamp}"

# --- python and pip ------------------------------------------------------------------------------
python="${PYTHON:-}"
if [ -z "${python}" ]; then
    for candidate in /usr/bin/python3 python3; do
        if command -v "${candidate}" >/dev/null 2>&1 && "${candidate}" -m pip --version >/dev/null 2>&1; then
            python="${candidate}"
            break
        fi
    done
fi
if [ -z "${python}" ]; then
    [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 ||
        die "no python3 with pip; set PYTHON or run as root to install python3-pip with apt-get"
    log "installing python3-pip python3-setuptools python3-wheel with apt-get"
    pkgs=(python3 python3-pip python3-setuptools python3-wheel)
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${pkgs[@]}" ||
        { DEBIAN_FRONTEND=noninteractive apt-get update -q &&
          DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${pkgs[@]}"; }
    python=/usr/bin/python3
fi
"${python}" -m pip --version >/dev/null 2>&1 || die "${python} has no pip"

mkdir -p "${work}"
tmp="$(mktemp -d "${work}/tmp.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT

# copy of the source without bytecode or build residue
mkdir -p "${tmp}/src"
(cd "${sim_dir}" && source_files | tar --null -T - -cf - | tar -C "${tmp}/src" -xf -)
srcdir="${tmp}/src/vllm_standin"
mkdir -p "${tmp}/out"

local_backend() {
    "${python}" - <<'EOF' 2>/dev/null
import sys
import setuptools
major, minor = (int(x) for x in setuptools.__version__.split(".")[:2])
if (major, minor) < (61, 0):
    sys.exit(1)
if (major, minor) < (70, 1):
    import wheel  # noqa: F401  (bdist_wheel lives in the wheel package before setuptools 70.1)
EOF
}

pip_wheel=("${python}" -m pip wheel --no-deps --no-index --disable-pip-version-check -q -w "${tmp}/out")
if local_backend; then
    log "building with ${python}'s own setuptools (offline, no build isolation)"
    env -u PIP_FIND_LINKS "${pip_wheel[@]}" --no-build-isolation "${srcdir}"
else
    if ! ls "${deps}"/setuptools-*.whl >/dev/null 2>&1 || ! ls "${deps}"/wheel-*.whl >/dev/null 2>&1; then
        log "fetching the build backend (setuptools>=61,<70, wheel) into ${deps}"
        mkdir -p "${deps}"
        "${python}" -m pip download --disable-pip-version-check -q --only-binary=:all: \
            -d "${deps}" "setuptools>=61,<70" "wheel" ||
            die "cannot fetch setuptools/wheel (no package index?); use a Python with setuptools>=61 and wheel (PYTHON=...)"
    fi
    log "building with the build backend from ${deps} (offline)"
    env -u PIP_FIND_LINKS "${pip_wheel[@]}" --find-links "${deps}" "${srcdir}"
fi

built="${tmp}/out/${wheel_name}"
[ -s "${built}" ] || die "pip built $(ls "${tmp}/out" | xargs) instead of ${wheel_name}"

# --- check the wheel -----------------------------------------------------------------------------
"${python}" - "${built}" "${version}" <<'EOF' || die "the wheel does not look right (see above)"
import sys
import zipfile

path, version = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(path) as wheel:
    names = wheel.namelist()
    info = "vllm-%s.dist-info/" % version
    metadata = wheel.read(info + "METADATA").decode()
    entry_points = wheel.read(info + "entry_points.txt").decode()
problems = []
if "Name: vllm\n" not in metadata:
    problems.append("METADATA Name is not vllm")
if "Version: %s\n" % version not in metadata:
    problems.append("METADATA Version is not %s" % version)
if "vllm = vllm.scripts:main" not in entry_points:
    problems.append("no console script vllm = vllm.scripts:main")
for module in ("vllm/scripts.py", "vllm/entrypoints/openai/api_server.py", "vllm/engine_standin.py"):
    if module not in names:
        problems.append("missing " + module)
if any("__pycache__" in name for name in names):
    problems.append("bytecode inside the wheel")
for problem in problems:
    print("[build-wheel] " + problem, file=sys.stderr)
sys.exit(1 if problems else 0)
EOF
mkdir -p "${tmp}/run"
(cd "${tmp}/run" && "${python}" -m zipfile -e "${built}" .)
got="$(cd "${tmp}/run" && PYTHONPATH=. "${python}" -c 'import sys; from vllm.scripts import main; sys.argv = ["vllm", "--version"]; main()')"
[ "${got}" = "${version}" ] || die "vllm --version from the wheel printed '${got}'"

# --- the torch stand-in: a pure wheel of two files, written directly --------------------------------
"${python}" - "${sim_dir}/torch_standin" "${tmp}/out/${torch_wheel}" "${torch_version}" <<'EOF' || die "cannot write ${torch_wheel}"
import base64
import hashlib
import sys
import zipfile

src, path, version = sys.argv[1:4]
info = "torch-%s.dist-info/" % version
metadata = ("Metadata-Version: 2.1\nName: torch\nVersion: %s\nSummary: gpu-fleet simulator stand-in of torch "
            "(test only, not PyTorch): version facts only\n" % version)
files = [("torch/__init__.py", open(src + "/__init__.py", "rb").read()),
         ("torch/version.py", open(src + "/version.py", "rb").read()),
         (info + "METADATA", metadata.encode()),
         (info + "WHEEL", b"Wheel-Version: 1.0\nGenerator: gpu-fleet build-wheel.sh\nRoot-Is-Purelib: true\nTag: py3-none-any\n")]


def member(wheel, name, data):
    entry = zipfile.ZipInfo(name, date_time=(2023, 6, 1, 0, 0, 0))
    entry.external_attr = 0o644 << 16
    wheel.writestr(entry, data)


record = []
with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as wheel:
    for name, data in files:
        member(wheel, name, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (name, digest, len(data)))
    record.append(info + "RECORD,,")
    member(wheel, info + "RECORD", "\n".join(record) + "\n")
EOF

mkdir -p "${out}"
find "${out}" -maxdepth 1 \( -name 'vllm-*.whl' -o -name 'torch-*.whl' \) -delete
cp "${built}" "${out}/${wheel_name}"
cp "${tmp}/out/${torch_wheel}" "${out}/${torch_wheel}"

printf '%s\n' "${inputs}" > "${stamp}"
log "built ${out}/${wheel_name} and ${torch_wheel} [$(elapsed) s]"
