# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Capture the raw outputs a GPU host gives our facts modules, one file per command, plus
# commands.tsv (file, exit code, command) -- the same layout as tests/fixtures/real/h200_vm/.
# Run ON the GPU host; then sanitise the result with tests/hardware/sanitize.py before committing.
#
#   bash tests/hardware/capture.sh OUTDIR
. "$(dirname "$0")/_capture_lib.sh"

cap driver_version.out cat /proc/driver/nvidia/version
cap smi_version.out nvidia-smi --version
cap smi.out nvidia-smi
cap smi_L.out nvidia-smi -L
cap q.out nvidia-smi -q
cap q_x.out nvidia-smi -q -x
cap topo_m.out nvidia-smi topo -m
cap topo_mp.out nvidia-smi topo -mp
cap topo_p2p_r.out nvidia-smi topo -p2p r
cap topo_p2p_w.out nvidia-smi topo -p2p w
cap topo_p2p_n.out nvidia-smi topo -p2p n
cap topo_p2p_a.out nvidia-smi topo -p2p a
cap nvlink_s.out nvidia-smi nvlink -s
cap nvlink_status.out nvidia-smi nvlink --status
cap nvlink_c.out nvidia-smi nvlink -c
cap query_gpu.out nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,driver_version,memory.total,memory.used,ecc.mode.current,ecc.errors.corrected.volatile.total,ecc.errors.uncorrected.volatile.total,ecc.errors.uncorrected.aggregate.total,pcie.link.gen.current,pcie.link.width.current,persistence_mode,compute_cap --format=csv
cap numactl_H.out numactl -H
cap lscpu.out lscpu
cap nodes.out sh -c 'for n in /sys/devices/system/node/node*; do echo "$n cpulist=$(cat $n/cpulist)"; done; cat /sys/devices/system/node/online'
# every NVIDIA PCI function (GPUs, NVSwitches, bridges) and every network controller
cap pci_devices.out sh -c 'for dev in /sys/bus/pci/devices/*; do c=$(cat $dev/class); v=$(cat $dev/vendor); case "$v:$c" in 0x10de:*|*:0x02*) echo "$dev vendor=$v device=$(cat $dev/device) class=$c numa_node=$(cat $dev/numa_node 2>/dev/null) local_cpulist=$(cat $dev/local_cpulist 2>/dev/null) speed=$(cat $dev/current_link_speed 2>/dev/null) width=$(cat $dev/current_link_width 2>/dev/null) max_speed=$(cat $dev/max_link_speed 2>/dev/null) max_width=$(cat $dev/max_link_width 2>/dev/null)";; esac; done'
cap pci_tree.out sh -c 'for dev in /sys/bus/pci/devices/*; do [ "$(cat $dev/vendor)" = 0x10de ] && readlink -f $dev; done'
cap ib_devices.out sh -c 'ls -l /sys/class/infiniband/ 2>&1; ls -l /sys/class/net/ 2>&1'
cap os.out sh -c 'cat /etc/os-release; uname -a; python3 --version; which numactl taskset systemctl logrotate crontab'
cap sysctl.out sh -c 'sysctl vm.swappiness net.core.rmem_max net.core.wmem_max kernel.numa_balancing; cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor'
cap fabricmanager.out sh -c 'systemctl is-active nvidia-fabricmanager; ls /usr/bin/nv-fabricmanager /usr/share/nvidia/nvswitch 2>&1'
cap dmesg_nv.out sh -c 'dmesg | grep -iE "nvidia|nvrm|nvlink|xid" | tail -80'
cap nccl_libs.out sh -c 'ldconfig -p | grep -i nccl; find / -xdev -name "libnccl*.so*" 2>/dev/null | head -20'
cap torch_nccl.out python3 -c 'import torch;print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version(), torch.cuda.device_count())'
exit 0
