# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Sourced by capture.sh and capture_health.sh: OUTDIR from $1, commands.tsv, and `cap FILE CMD...`
# (stdout+stderr of CMD into OUTDIR/FILE, its exit code into commands.tsv), with LC_ALL=C.
set -u
out=${1:?usage: $0 OUTDIR}
mkdir -p "$out"
export LC_ALL=C
printf 'file\trc\tcommand\n' >"$out/commands.tsv"

cap() { # cap FILE CMD...
    local file=$1
    shift
    "$@" >"$out/$file" 2>&1
    printf '%s\t%s\t%s\n' "$file" "$?" "$*" >>"$out/commands.tsv"
}
