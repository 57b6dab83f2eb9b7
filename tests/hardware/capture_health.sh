# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Capture the GPU-health outputs the compliance gates read (NVLink error counters, NVSwitch
# devices, Fabric Manager, persistence, DCGM, retired pages / remapped rows), one file per
# command plus commands.tsv, in the layout of capture.sh. Run ON the GPU host; sanitise with
# tests/hardware/sanitize.py before committing.
#
#   bash tests/hardware/capture_health.sh OUTDIR
. "$(dirname "$0")/_capture_lib.sh"

cap smi_version.out nvidia-smi --version
cap nvlink_e.out nvidia-smi nvlink -e
cap nvlink_e_i0.out nvidia-smi nvlink -e -i 0
cap nvlink_s.out nvidia-smi nvlink -s
cap q_page_retirement.out nvidia-smi -q -d PAGE_RETIREMENT
cap q_row_remapper.out nvidia-smi -q -d ROW_REMAPPER
cap q_ecc.out nvidia-smi -q -d ECC
cap q_fabric.out sh -c 'nvidia-smi -q | sed -n "/^    Fabric/,/^    [A-Z][a-z]* [A-Z]/p"'
cap query_persistence.out nvidia-smi --query-gpu=index,pci.bus_id,persistence_mode,retired_pages.pending,retired_pages.single_bit_ecc.count,retired_pages.double_bit.count,remapped_rows.pending,remapped_rows.failure --format=csv
cap nvswitch_proc.out sh -c 'ls -la /proc/driver/nvidia-nvswitch/ /proc/driver/nvidia-nvswitch/devices/ 2>&1'
cap proc_gpus.out sh -c 'for f in /proc/driver/nvidia/gpus/*/information; do echo "== $f"; cat "$f"; done'
cap persistenced.out sh -c 'ps -eo pid,comm,args | grep -i "[n]vidia-persistenced"; ls -la /var/run/nvidia-persistenced 2>&1'
cap dcgmi.out sh -c 'command -v dcgmi nv-hostengine nv-fabricmanager nvidia-persistenced 2>&1; dpkg -l 2>/dev/null | grep -iE "datacenter-gpu-manager|fabricmanager|nvidia-driver|libnvidia-nscq|nvlsm" 2>&1'
cap pci_nvidia_class.out sh -c 'for dev in /sys/bus/pci/devices/*; do [ "$(cat $dev/vendor)" = 0x10de ] && echo "$dev class=$(cat $dev/class) device=$(cat $dev/device)"; done'
cap dmesg_nv.out sh -c 'dmesg | grep -iE "nvidia|nvrm|nvlink|xid|nvswitch" | tail -80'
exit 0
