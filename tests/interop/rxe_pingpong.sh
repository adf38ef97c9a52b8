#!/bin/bash
# Interop: rdma-core's ibv_rc_pingpong on the Linux kernel's Soft-RoCE (rdma_rxe, in a QEMU
# guest) against ndnic's rc_pingpong on the host, both roles, 64-byte and 4 KiB messages (one
# packet, and four at rxe's 1024-byte path MTU).
#
#   rxe_pingpong.sh RC_PINGPONG_BINARY      (as root; meson runs it in the 'interop' suite)
#
# Everything runs in a network namespace private to this script: the tap, the host address the
# tools' TCP side channel uses, the guest's NIC, ndnic's af_packet port. It vanishes with the
# script, so nothing is left behind and nothing can reach the machine's real interfaces.
#
#   host kernel 198.18.0.1 (TCP 18515) --+-- rxetap0 --- guest eth0 198.18.0.2, rxe0
#   ndnic       198.18.0.3 (RoCEv2)    --+
#
# Knobs: ITERS (300), ACCEL (tcg; KVM does not work on the machines this was written on),
# NDNIC_INTEROP_LOGS (logs and per-case pcaps), NDNIC_INTEROP_CACHE (see build-guest.sh).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
readonly kTap=rxetap0
readonly kHostIp=198.18.0.1
readonly kGuestIp=198.18.0.2
readonly kNdnicIp=198.18.0.3
readonly kGuestMac=52:54:00:12:00:02
readonly kCaseTimeout=120   # seconds for one rc_pingpong run, connection included
readonly kGuestTimeout=600  # seconds for the whole guest run
ITERS=${ITERS:-300}
ACCEL=${ACCEL:-tcg}
LOGS=${NDNIC_INTEROP_LOGS:-/tmp/ndnic-interop-logs}

# Cases in the order both sides run them: name, guest role, size.
readonly kCases=("s64 server 64" "c64 client 64" "s4096 server 4096" "c4096 client 4096")

cannot_boot() {
  echo "############################################################################"
  echo "# INTEROP NOT RUN: this machine cannot boot the rxe guest: $*"
  echo "############################################################################"
  exit 77  # meson: skipped
}

prepare() {
  RC_PINGPONG=$(realpath "${1:?usage: $0 RC_PINGPONG_BINARY}")
  [ "$(id -u)" = 0 ] || { echo "FAIL: the interop test needs root (CI runs as root)"; exit 1; }
  "$HERE/../../scripts/install-deps.sh" qemu-system-x86 busybox-static cpio kmod ||
    cannot_boot "installing qemu-system-x86 busybox-static cpio kmod failed"
  command -v qemu-system-x86_64 >/dev/null || cannot_boot "no qemu-system-x86_64"
  [ -c /dev/net/tun ] || cannot_boot "no /dev/net/tun"
  local rc=0
  GUEST=$("$HERE/build-guest.sh" | tail -n 1) || rc=$?
  [ $rc != 2 ] || cannot_boot "the Debian archive is out of reach (no kernel or rdma-core packages)"
  [ $rc = 0 ] && [ -f "$GUEST/vmlinux" ] || { echo "FAIL: building the guest failed"; exit 1; }
  rm -rf "$LOGS" && mkdir -p "$LOGS"
  export RC_PINGPONG GUEST LOGS ITERS ACCEL
  exec unshare --net -- "$0" --in-netns
}

# ---- inside the private namespace -------------------------------------------------------------

QEMU_PID=
HOST_PID=
cleanup() {
  for p in $HOST_PID $QEMU_PID; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}

setup_net() {
  sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
  # ndnic shares the tap's MAC: frames for 198.18.0.3 also reach this kernel, which must drop
  # them rather than route them back out of the tap.
  sysctl -qw net.ipv4.conf.all.forwarding=0
  ip link set lo up
  ip tuntap add dev $kTap mode tap
  ip addr add $kHostIp/24 dev $kTap
  ip link set $kTap up
}

# The guest runs every case in turn; as a client it retries while the host's server starts.
guest_script() {
  cat <<EOF
run() {
  name=\$1; shift; n=0
  while :; do
    ibv_rc_pingpong -d rxe0 -g 1 -n $ITERS "\$@" > /tmp/out 2>&1; rc=\$?
    if [ \$rc -ne 0 ] && grep -q "Couldn't connect" /tmp/out && [ \$n -lt 240 ]; then
      n=\$((n + 1)); sleep 0.25; continue
    fi
    break
  done
  echo "=== CASE \$name BEGIN"; cat /tmp/out; echo "=== CASE \$name END rc=\$rc"
}
EOF
  for c in "${kCases[@]}"; do
    set -- $c
    if [ "$2" = server ]; then echo "run $1 -s $3"; else echo "run $1 -s $3 $kHostIp"; fi
  done
}

# rc_pingpong busy-polls its lcore (0); sharing that CPU with the emulated guest would make
# both crawl (a scheduler slice per message), so the guest gets the other CPUs when there are.
boot_guest() {
  local accel="-accel tcg -cpu max" pin=() smp=1 cpus
  [ "$ACCEL" = kvm ] && accel="-accel kvm -cpu host"
  cpus=$(nproc)
  if [ "$cpus" -ge 2 ]; then
    pin=(taskset -c "1-$((cpus - 1))")
    smp=$((cpus - 1 < 2 ? cpus - 1 : 2))
  fi
  timeout -k 5 $kGuestTimeout "${pin[@]}" qemu-system-x86_64 $accel -m 1024 -smp $smp -nodefaults -no-user-config \
    -no-reboot -monitor none -display none -serial "file:$LOGS/guest.log" \
    -kernel "$GUEST/vmlinux" -initrd "$GUEST/initrd.cpio" \
    -netdev tap,id=n0,ifname=$kTap,script=no,downscript=no \
    -device virtio-net-pci,netdev=n0,mac=$kGuestMac,romfile= \
    -append "console=ttyS0 panic=-1 quiet loglevel=4 rxe.ip=$kGuestIp/24 rxe.cmd=$(guest_script | base64 -w0)" &
  QEMU_PID=$!
}

# ndnic's side of one case; the opposite role of the guest's.
host_case() {
  local name=$1 guest_role=$2 size=$3 peer=()
  [ "$guest_role" = server ] && peer=(--retry $((kCaseTimeout - 30)) $kGuestIp)
  timeout -k 5 $kCaseTimeout "$RC_PINGPONG" -l 0 -- -g 1 -s "$size" -n "$ITERS" --ip $kNdnicIp \
    --dev "net_af_packet0,iface=$kTap" --capture "$LOGS/$name.pcap" "${peer[@]}" \
    > "$LOGS/host-$name.log" 2>&1 &
  HOST_PID=$!
  local rc=0
  wait $HOST_PID || rc=$?
  HOST_PID=
  return $rc
}

# "300 iters in 0.12 seconds = 400.00 usec/iter" -> "300 400.00"; empty when absent.
iters_line() { awk '/ iters in .* usec\/iter/{print $1, $(NF-1); exit}' "$1"; }
mbit_line() { awk '/ bytes in .* Mbit\/sec/{print $(NF-1); exit}' "$1"; }

report() {
  local failed=0
  printf '\n%-6s %-28s %-6s %-40s %s\n' case direction result "ndnic (host)" "rxe (guest)"
  for c in "${kCases[@]}"; do
    set -- $c
    local name=$1 role=$2 size=$3 dir result=PASS
    [ "$role" = server ] && dir="ndnic client -> rxe server" || dir="rxe client -> ndnic server"
    sed -n "/^=== CASE $name BEGIN/,/^=== CASE $name END/p" "$LOGS/guest.log" | tr -d '\r' > "$LOGS/guest-$name.log"
    local host_rc guest_rc h g
    host_rc=$(cat "$LOGS/host-$name.rc" 2>/dev/null || echo "not run")
    guest_rc=$(sed -n "s/^=== CASE $name END rc=//p" "$LOGS/guest-$name.log")
    h=$(iters_line "$LOGS/host-$name.log" 2>/dev/null || true)
    g=$(iters_line "$LOGS/guest-$name.log")
    if [ "$host_rc" != 0 ] || [ "${guest_rc:-x}" != 0 ] || [ "${h%% *}" != "$ITERS" ] || [ "${g%% *}" != "$ITERS" ]; then
      result=FAIL
      failed=1
    fi
    printf '%-6s %-28s %-6s %-40s %s\n' "${size}B" "$dir" $result \
      "${h:+${h%% *} iters ${h#* } us/iter $(mbit_line "$LOGS/host-$name.log") Mb/s}" \
      "${g:+${g%% *} iters ${g#* } us/iter $(mbit_line "$LOGS/guest-$name.log") Mb/s}"
    [ $result = PASS ] || echo "       host exit $host_rc, guest exit ${guest_rc:-none}: see $LOGS/host-$name.log, $LOGS/guest-$name.log"
  done
  echo "logs and pcaps (ndnic's frames) in $LOGS"
  return $failed
}

in_netns() {
  trap cleanup EXIT
  trap 'exit 143' TERM INT  # meson's timeout: still stop the guest on the way out
  setup_net
  boot_guest
  for c in "${kCases[@]}"; do
    set -- $c
    local rc=0
    host_case "$1" "$2" "$3" || rc=$?
    echo $rc > "$LOGS/host-$1.rc"
    echo "case $1: rc_pingpong exit $rc"
    sed 's/^/  host | /' "$LOGS/host-$1.log"
    # Out of step with the guest after a failure: the rest would only wait for timeouts. The
    # guest gets a moment to print its side of the failed case first.
    if [ $rc != 0 ]; then
      sleep 5
      kill $QEMU_PID 2>/dev/null || true
      break
    fi
  done
  wait $QEMU_PID || true
  QEMU_PID=
  tr -d '\r' < "$LOGS/guest.log" | sed -n '/RXE-CMD BEGIN/,/RXE-CMD END/p' | sed 's/^/  guest | /'
  report
}

if [ "${1:-}" = --in-netns ]; then in_netns; else prepare "$@"; fi
