#!/bin/bash
# Interop against the Linux kernel's Soft-RoCE (rdma_rxe, in a QEMU guest), one guest boot for
# every case, both roles each:
#   - rdma-core's ibv_rc_pingpong against ndnic's rc_pingpong (the verbs engine), 64 B and 4 KiB
#     (one packet, and four at rxe's 1024-byte path MTU);
#   - rdma-core's rping (librdmacm: IB CM on QP1, rdma_cm's service IDs and header) against
#     nd_rping (ndnic's ND v1 API: Listen/Connect/Accept, windows, Send, Read, Write), 64 B and
#     4000 B, with verification on (-V on the client; the server's -v lines checked here too).
#
#   rxe_interop.sh RC_PINGPONG_BINARY ND_RPING_BINARY   (as root; meson's 'interop' suite)
#
# Everything runs in a network namespace private to this script: the tap, the host address the
# tools' TCP side channel uses, the guest's NIC, ndnic's af_packet port. It vanishes with the
# script, so nothing is left behind and nothing can reach the machine's real interfaces.
#
#   host kernel 198.18.0.1 (TCP 18515) --+-- rxetap0 --- guest eth0 198.18.0.2, rxe0
#   ndnic       198.18.0.3 (RoCEv2)    --+
#
# Knobs: ITERS (300 pingpong iterations), PINGS (100 rping pings), ACCEL (tcg; KVM does not
# work on the machines this was written on), NDNIC_INTEROP_LOGS (logs and per-case pcaps),
# NDNIC_INTEROP_CACHE (see build-guest.sh), CASES (a subset, e.g. "rping-s64 rping-c64").
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
readonly kTap=rxetap0
readonly kHostIp=198.18.0.1
readonly kGuestIp=198.18.0.2
readonly kNdnicIp=198.18.0.3
readonly kGuestMac=52:54:00:12:00:02
readonly kCaseTimeout=120   # seconds for one case on the host, connection included
readonly kGuestTimeout=900  # seconds for the whole guest run
ITERS=${ITERS:-300}
PINGS=${PINGS:-100}
ACCEL=${ACCEL:-tcg}
LOGS=${NDNIC_INTEROP_LOGS:-/tmp/ndnic-interop-logs}

# Cases in the order both sides run them: name, tool, guest role, size. The tool is
# ibv_rc_pingpong/rc_pingpong ("pingpong") or rping/nd_rping ("rping").
readonly kAllCases=("pp-s64 pingpong server 64" "pp-c64 pingpong client 64"
  "pp-s4096 pingpong server 4096" "pp-c4096 pingpong client 4096"
  "rping-s64 rping server 64" "rping-c64 rping client 64"
  "rping-s4000 rping server 4000" "rping-c4000 rping client 4000")
readonly kRpingBasePort=7174

cannot_boot() {
  echo "############################################################################"
  echo "# INTEROP NOT RUN: this machine cannot boot the rxe guest: $*"
  echo "############################################################################"
  exit 77  # meson: skipped
}

prepare() {
  RC_PINGPONG=$(realpath "${1:?usage: $0 RC_PINGPONG_BINARY ND_RPING_BINARY}")
  ND_RPING=$(realpath "${2:?usage: $0 RC_PINGPONG_BINARY ND_RPING_BINARY}")
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
  export RC_PINGPONG ND_RPING GUEST LOGS ITERS PINGS ACCEL CASES
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

# The cases to run (all, or those named in CASES), one per line.
selected_cases() {
  local c
  for c in "${kAllCases[@]}"; do
    set -- $c
    if [ -z "${CASES:-}" ] || [[ " $CASES " == *" $1 "* ]]; then echo "$c"; fi
  done
}

# A port per rping case, so a connection never meets the previous one's TIMEWAIT.
rping_port() {
  local i=0 c
  for c in "${kAllCases[@]}"; do
    if [ "${c%% *}" = "$1" ]; then echo $((kRpingBasePort + i)); return; fi
    i=$((i + 1))
  done
}

# The guest runs every case in turn; as a client it retries while the host's server starts.
# rping's -v lines are long: the serial console gets their count and the start of the last.
# stderr apart: written unbuffered, it would land inside a buffered 4 KB line.
guest_script() {
  cat <<'EOF'
run() {
  name=$1; retry_if=$2; shift 2; n=0
  while :; do
    "$@" > /tmp/out 2> /tmp/err; rc=$?
    if [ $rc -ne 0 ] && cat /tmp/out /tmp/err | grep -Eq "$retry_if" && [ $n -lt 240 ]; then
      n=$((n + 1)); sleep 0.25; continue
    fi
    break
  done
  echo "=== CASE $name BEGIN"
  grep -v "ping data:" /tmp/out; cat /tmp/err
  echo "PINGS $(grep -c 'ping data:' /tmp/out)"
  grep "ping data:" /tmp/out | tail -n 1 | cut -c1-64
  echo "=== CASE $name END rc=$rc"
}
EOF
  local c
  while read -r c; do
    set -- $c
    local name=$1 tool=$2 role=$3 size=$4
    case "$tool/$role" in
      pingpong/server) echo "run $name NEVER ibv_rc_pingpong -d rxe0 -g 1 -n $ITERS -s $size" ;;
      pingpong/client) echo "run $name \"Couldn't connect\" ibv_rc_pingpong -d rxe0 -g 1 -n $ITERS -s $size $kHostIp" ;;
      rping/server) echo "run $name NEVER rping -s -v -a $kGuestIp -p $(rping_port "$name") -S $size" ;;
      rping/client) echo "run $name 'RDMA_CM_EVENT|connect error' rping -c -v -V -a $kNdnicIp -p $(rping_port "$name") -S $size -C $PINGS" ;;
    esac
  done < <(selected_cases)
}

# The host busy-polls CPU 0 (rc_pingpong's lcore, nd_rping's worker lcore); sharing that CPU
# with the emulated guest would make both crawl (a scheduler slice per message), so the guest
# gets the other CPUs when there are.
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

# ndnic's side of one case: the opposite role of the guest's.
host_case() {
  local name=$1 tool=$2 guest_role=$3 size=$4 cmd
  local retry=$((kCaseTimeout - 30))
  case "$tool/$guest_role" in
    pingpong/server) cmd=("$RC_PINGPONG" -l 0 -- -g 1 -s "$size" -n "$ITERS" --retry $retry $kGuestIp) ;;
    pingpong/client) cmd=("$RC_PINGPONG" -l 0 -- -g 1 -s "$size" -n "$ITERS") ;;
    # nd_rping's worker lcore and its ND thread share CPU 0; the thread sleeps between polls.
    rping/server) cmd=("$ND_RPING" --lcores 0@0,1@0 -- -c -v -V -a $kGuestIp -p "$(rping_port "$name")" -S "$size"
                       -C "$PINGS" --retry $retry --timeout 60) ;;
    rping/client) cmd=("$ND_RPING" --lcores 0@0,1@0 -- -s -v -p "$(rping_port "$name")" --timeout $retry) ;;
  esac
  cmd+=(--ip $kNdnicIp --dev "net_af_packet0,iface=$kTap" --capture "$LOGS/$name.pcap")
  local t0 rc=0
  t0=$(date +%s%N)
  timeout -k 5 $kCaseTimeout "${cmd[@]}" > "$LOGS/host-$name.log" 2>&1 &
  HOST_PID=$!
  wait $HOST_PID || rc=$?
  HOST_PID=
  echo $((($(date +%s%N) - t0) / 1000000)) > "$LOGS/host-$name.ms"
  return $rc
}

# "300 iters in 0.12 seconds = 400.00 usec/iter" -> "300 400.00"; empty when absent.
iters_line() { awk '/ iters in .* usec\/iter/{print $1, $(NF-1); exit}' "$1"; }
mbit_line() { awk '/ bytes in .* Mbit\/sec/{print $(NF-1); exit}' "$1"; }

# One case's verdict and figures: "PASS|FAIL<tab>ndnic's figures<tab>rxe's figures".
judge() {
  local name=$1 tool=$2 role=$3 size=$4 host_rc guest_rc h g ok=1
  host_rc=$(cat "$LOGS/host-$name.rc" 2>/dev/null || echo "not run")
  guest_rc=$(sed -n "s/^=== CASE $name END rc=//p" "$LOGS/guest-$name.log")
  { [ "$host_rc" = 0 ] && [ "${guest_rc:-x}" = 0 ]; } || ok=0
  if [ "$tool" = pingpong ]; then
    h=$(iters_line "$LOGS/host-$name.log" 2>/dev/null || true)
    g=$(iters_line "$LOGS/guest-$name.log")
    { [ "${h%% *}" = "$ITERS" ] && [ "${g%% *}" = "$ITERS" ]; } || ok=0
    h=${h:+${h%% *} iters ${h#* } us/iter $(mbit_line "$LOGS/host-$name.log") Mb/s}
    g=${g:+${g%% *} iters ${g#* } us/iter $(mbit_line "$LOGS/guest-$name.log") Mb/s}
  else
    # Every ping's data as nd_rping printed it (-v) must be exactly what rping's client put in
    # its buffer for that ping: read from rxe (nd_rping server) or written back by it (client).
    local prefix="ping data: " gp
    [ "$role" = client ] && prefix="server ping data: "
    [ -f "$LOGS/host-$name.log" ] && python3 "$HERE/rping_check.py" "$LOGS/host-$name.log" "$prefix" "$PINGS" "$size" > "$LOGS/check-$name.log" 2>&1 ||
      ok=0
    gp=$(sed -n 's/^PINGS //p' "$LOGS/guest-$name.log")
    [ "${gp:-0}" = "$PINGS" ] || ok=0
    h="$(grep -c "^$prefix" "$LOGS/host-$name.log" 2>/dev/null || true) pings verified, $(cat "$LOGS/host-$name.ms" 2>/dev/null) ms"
    g="${gp:-0} pings"
  fi
  printf '%s\t%s\t%s\n' "$([ $ok = 1 ] && echo PASS || echo FAIL)" "$h" "$g"
}

report() {
  local failed=0 c
  printf '\n%-12s %-32s %-6s %-44s %s\n' case direction result "ndnic (host)" "rxe (guest)"
  while read -r c; do
    set -- $c
    local name=$1 tool=$2 role=$3 dir verdict result h g
    if [ "$role" = server ]; then dir="ndnic client -> rxe server"; else dir="rxe client -> ndnic server"; fi
    [ "$tool" = rping ] && dir=${dir//ndnic/nd_rping} && dir=${dir//rxe/rping}
    sed -n "/^=== CASE $name BEGIN/,/^=== CASE $name END/p" "$LOGS/guest.log" | tr -d '\r' > "$LOGS/guest-$name.log"
    verdict=$(judge "$@")
    IFS=$'\t' read -r result h g <<< "$verdict"
    [ "$result" = PASS ] || failed=1
    printf '%-12s %-32s %-6s %-44s %s\n' "$name" "$dir" "$result" "$h" "$g"
    if [ "$result" != PASS ]; then
      echo "             host exit $(cat "$LOGS/host-$name.rc" 2>/dev/null || echo 'not run'): see $LOGS/host-$name.log, $LOGS/guest-$name.log"
      if [ -s "$LOGS/check-$name.log" ]; then sed 's/^/             /' "$LOGS/check-$name.log" | head -n 5; fi
    fi
  done < <(selected_cases)
  echo "logs and pcaps (ndnic's frames) in $LOGS"
  return $failed
}

in_netns() {
  trap cleanup EXIT
  trap 'exit 143' TERM INT  # meson's timeout: still stop the guest on the way out
  setup_net
  boot_guest
  local c
  while read -r c; do
    set -- $c
    local rc=0
    host_case "$@" || rc=$?
    echo $rc > "$LOGS/host-$1.rc"
    echo "case $1: host exit $rc ($(cat "$LOGS/host-$1.ms") ms)"
    grep -v "ping data:" "$LOGS/host-$1.log" | sed 's/^/  host | /' || true
    # Out of step with the guest after a failure: the rest would only wait for timeouts. The
    # guest gets a moment to print its side of the failed case first.
    if [ $rc != 0 ]; then
      sleep 5
      kill $QEMU_PID 2>/dev/null || true
      break
    fi
  done < <(selected_cases)
  wait $QEMU_PID || true
  QEMU_PID=
  tr -d '\r' < "$LOGS/guest.log" | sed -n '/RXE-CMD BEGIN/,/RXE-CMD END/p' | sed 's/^/  guest | /'
  report
}

if [ "${1:-}" = --in-netns ]; then in_netns; else prepare "$@"; fi
