#!/bin/sh
# PID 1 of the interop guest: brings up eth0 and rxe0 (Soft-RoCE), runs the script passed on
# the kernel command line, prints its output between markers on the serial console, powers off.
#   rxe.ip=A.B.C.D/NN   address for eth0
#   rxe.cmd=<base64>    a short script; a longer one is /cmd.sh, in a second cpio archive that
#                       the host appends to the cached initramfs for each run (no disk, no
#                       share: the guest image stays the same for every run)
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
IP=198.18.0.2/24
CMD=
for x in $(cat /proc/cmdline); do
  case "$x" in
    rxe.ip=*) IP=${x#rxe.ip=} ;;
    rxe.cmd=*) CMD=${x#rxe.cmd=} ;;
  esac
done
for m in virtio_pci virtio_net crc32_generic rdma_rxe ib_uverbs rdma_ucm; do
  modprobe $m || echo "[init] modprobe $m failed"
done
n=0
while [ ! -e /sys/class/net/eth0 ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
/bin/ip link set lo up
/bin/ip link set eth0 up
/bin/ip addr add "$IP" dev eth0
rdma link add rxe0 type rxe netdev eth0 && echo "[init] rxe0 on eth0 ($IP)"
echo "[init] ready at $(cut -d' ' -f1 /proc/uptime)s"
if [ -n "$CMD" ]; then echo "$CMD" | base64 -d > /tmp/cmd.sh; else cp /cmd.sh /tmp/cmd.sh; fi
echo "===== RXE-CMD BEGIN"
sh /tmp/cmd.sh 2>&1
echo "===== RXE-CMD END rc=$?"
sync
poweroff -f
