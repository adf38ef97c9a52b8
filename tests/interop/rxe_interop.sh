#!/bin/bash
# The interop matrix against the Linux kernel's Soft-RoCE (rdma_rxe in a QEMU guest): one guest
# boot for every case, the guest's side and ndnic's side of each case run in step. The cases come
# from plugins, one per tool, in cases/:
#   pingpong.sh  rdma-core's ibv_rc_pingpong <-> rc_pingpong (verbs engine), both roles
#   rping.sh     rdma-core's rping (librdmacm) <-> nd_rping (ND v1 API), both roles
#   perftest.sh  perftest's ib_{send,write,read}_{bw,lat} <-> ndperf --perftest, both roles
#   verbs.sh     tests/interop/verbs_peer (libibverbs) <-> nd_peer (ND v1 + extension)
#   fabric.sh    fi_pingpong -p verbs (Debian's libfabric) <-> fi_pingpong -p ndnic, both roles
#
#   rxe_interop.sh BUILD_DIR   (as root; meson's 'interop' suite and `make interop`)
#
# A plugin cases/<tool>.sh defines, for a case line "NAME TOOL GUEST_ROLE [ARG...]":
#   <tool>_cases                       echo its case lines
#   <tool>_guest NAME ROLE [ARG...]    echo the guest's shell line(s): `run NAME RETRY_REGEX cmd...`
#                                      (retries while cmd fails with output matching RETRY_REGEX,
#                                      NEVER for none; prints the case's BEGIN/END block)
#   <tool>_host NAME ROLE [ARG...]     set HOST_CMD, ndnic's side (stdout to $LOGS/host-NAME.log)
#   <tool>_judge NAME ROLE [ARG...]    print "PASS|FAIL<tab>ndnic's figures<tab>rxe's figures"
#   <tool>_direction ROLE [ARG...]     echo the direction, e.g. "nd_rping -> rping"
#   <tool>_guest_files (optional)      echo "HOST_PATH GUEST_PATH" lines carried into the guest
# with $BUILD, $LOGS, $HERE, $kGuestIp, $kNdnicIp, $kHostIp, $kNdnicDev and the helpers host_rc,
# guest_rc and verdict below. A plugin that cannot run here (a binary not built) says why in
# <tool>_cases on stderr and lists nothing.
#
# Everything runs in a network namespace private to this script: the tap, the host address the
# tools' TCP side channels use, the guest's NIC, ndnic's af_packet port. It vanishes with the
# script, so nothing is left behind and nothing can reach the machine's real interfaces.
#
#   host kernel 198.18.0.1 (TCP) --+-- rxetap0 --- guest eth0 198.18.0.2, rxe0
#   ndnic       198.18.0.3 (RoCEv2) --+
#
# Knobs: CASES (a subset of names, e.g. "rping-s64 pp-c64"), TOOLS (a subset of plugins),
# ACCEL (tcg; KVM does not work on the machines this was written on), NDNIC_INTEROP_LOGS (logs
# and per-case pcaps), NDNIC_INTEROP_CACHE (see build-guest.sh), and the plugins' own (ITERS,
# PINGS, ...).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
readonly kTap=rxetap0
readonly kHostIp=198.18.0.1
readonly kGuestIp=198.18.0.2
readonly kNdnicIp=198.18.0.3
readonly kNdnicDev="net_af_packet0,iface=$kTap"
readonly kGuestMac=52:54:00:12:00:02
readonly kCaseTimeout=120   # seconds for one case on the host, connection included
readonly kGuestTimeout=1800 # seconds for the whole guest run
readonly kGuestGrace=20     # seconds the guest gets to finish a case after the host's side ended
ACCEL=${ACCEL:-tcg}
LOGS=${NDNIC_INTEROP_LOGS:-/tmp/ndnic-interop-logs}
TOOLS=${TOOLS:-pingpong rping perftest verbs fabric}

for t in $TOOLS; do
  [ -f "$HERE/cases/$t.sh" ] && source "$HERE/cases/$t.sh"
done

host_rc() { cat "$LOGS/host-$1.rc" 2>/dev/null || echo "not run"; }
guest_rc() { sed -n "s/^=== CASE $1 END rc=//p" "$LOGS/guest-$1.log" 2>/dev/null; }
verdict() { if [ "$1" = 1 ]; then echo PASS; else echo FAIL; fi; }

cannot_boot() {
  echo "############################################################################"
  echo "# INTEROP NOT RUN: this machine cannot boot the rxe guest: $*"
  echo "############################################################################"
  exit 77  # meson: skipped
}

# The cases to run (every plugin's, or those named in CASES), one per line.
selected_cases() {
  local t c
  for t in $TOOLS; do
    declare -F "${t}_cases" >/dev/null || continue
    while read -r c; do
      [ -n "$c" ] || continue
      set -- $c
      if [ -z "${CASES:-}" ] || [[ " $CASES " == *" $1 "* ]]; then echo "$c"; fi
    done < <("${t}_cases")
  done
}

prepare() {
  BUILD=$(realpath "${1:?usage: $0 BUILD_DIR}")
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
  selected_cases > "$LOGS/cases"
  [ -s "$LOGS/cases" ] || { echo "FAIL: no case selected (TOOLS='$TOOLS' CASES='${CASES:-}')"; exit 1; }
  export BUILD GUEST LOGS ACCEL CASES TOOLS
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
# Output lines containing "ping data:" (rping -v: long) are counted, not copied: the serial
# console gets their count and the start of the last. stderr apart: written unbuffered, it
# would land inside a buffered 4 KB line.
guest_script() {
  cat <<'EOG'
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
  if grep -q "ping data:" /tmp/out; then
    echo "PINGS $(grep -c 'ping data:' /tmp/out)"
    grep "ping data:" /tmp/out | tail -n 1 | cut -c1-64
  fi
  echo "=== CASE $name END rc=$rc"
}
EOG
  local c
  while read -r c; do
    set -- $c
    local name=$1 tool=$2
    shift 2
    "${tool}_guest" "$name" "$@"
  done < "$LOGS/cases"
}

# The guest's per-run files: the case script and what plugins carry in, as a second cpio
# archive after the cached initramfs (the kernel unpacks both; the command line holds 2 KB).
guest_initrd() {
  local d="$LOGS/guest-extra" t src dst
  rm -rf "$d" && mkdir -p "$d"
  guest_script > "$d/cmd.sh"
  for t in $TOOLS; do
    declare -F "${t}_guest_files" >/dev/null || continue
    while read -r src dst; do
      [ -n "$src" ] || continue
      mkdir -p "$d/$(dirname "$dst")"
      cp "$src" "$d/$dst"
    done < <("${t}_guest_files")
  done
  { cat "$GUEST/initrd.cpio"; (cd "$d" && find . -print0 | cpio --null -o -H newc --quiet); } > "$LOGS/initrd.cpio"
}

# The host busy-polls CPU 0 (the tools' lcores); sharing that CPU with the emulated guest would
# make both crawl (a scheduler slice per message), so the guest gets the other CPUs when there are.
boot_guest() {
  local accel="-accel tcg -cpu max" pin=() smp=1 cpus
  [ "$ACCEL" = kvm ] && accel="-accel kvm -cpu host"
  cpus=$(nproc)
  if [ "$cpus" -ge 2 ]; then
    pin=(taskset -c "1-$((cpus - 1))")
    smp=$((cpus - 1 < 2 ? cpus - 1 : 2))
  fi
  guest_initrd
  timeout -k 5 $kGuestTimeout "${pin[@]}" qemu-system-x86_64 $accel -m 1024 -smp $smp -nodefaults -no-user-config \
    -no-reboot -monitor none -display none -serial "file:$LOGS/guest.log" \
    -kernel "$GUEST/vmlinux" -initrd "$LOGS/initrd.cpio" \
    -netdev tap,id=n0,ifname=$kTap,script=no,downscript=no \
    -device virtio-net-pci,netdev=n0,mac=$kGuestMac,romfile= \
    -append "console=ttyS0 panic=-1 quiet loglevel=4 rxe.ip=$kGuestIp/24" &
  QEMU_PID=$!
}

# ndnic's side of one case, in the foreground; its exit code, output and wall time in $LOGS.
host_case() {
  local name=$1 tool=$2 rc=0 t0
  shift 2
  HOST_CMD=()
  "${tool}_host" "$name" "$@"
  t0=$(date +%s%N)
  timeout -k 5 $kCaseTimeout "${HOST_CMD[@]}" > "$LOGS/host-$name.log" 2>&1 &
  HOST_PID=$!
  wait $HOST_PID || rc=$?
  HOST_PID=
  echo $((($(date +%s%N) - t0) / 1000000)) > "$LOGS/host-$name.ms"
  echo $rc > "$LOGS/host-$name.rc"
  return $rc
}

# Waits until the guest has finished case NAME (its END line on the console), at most SECONDS.
wait_guest_case() {
  local i
  for ((i = 0; i < $2 * 4; i++)); do
    grep -q "^=== CASE $1 END" "$LOGS/guest.log" 2>/dev/null && return 0
    kill -0 $QEMU_PID 2>/dev/null || return 1
    sleep 0.25
  done
  return 1
}

report() {
  local failed=0 c
  printf '\n%-18s %-44s %-6s %-44s %s\n' case direction result "ndnic (host)" "rxe (guest)"
  while read -r c; do
    set -- $c
    local name=$1 tool=$2 result h g
    shift 2
    sed -n "/^=== CASE $name BEGIN/,/^=== CASE $name END/p" "$LOGS/guest.log" | tr -d '\r' > "$LOGS/guest-$name.log"
    IFS=$'\t' read -r result h g < <("${tool}_judge" "$name" "$@")
    [ "$result" = PASS ] || failed=1
    printf '%-18s %-44s %-6s %-44s %s\n' "$name" "$("${tool}_direction" "$@")" "$result" "$h" "$g"
    if [ "$result" != PASS ]; then
      echo "                 host exit $(host_rc "$name"), guest exit $(guest_rc "$name"): see $LOGS/host-$name.log, $LOGS/guest-$name.log"
      if [ -s "$LOGS/check-$name.log" ]; then sed 's/^/                 /' "$LOGS/check-$name.log" | head -n 5; fi
    fi
  done < "$LOGS/cases"
  echo "$(grep -c . "$LOGS/cases") cases; logs and pcaps (ndnic's frames) in $LOGS"
  return $failed
}

in_netns() {
  trap cleanup EXIT
  trap 'exit 143' TERM INT  # meson's timeout: still stop the guest on the way out
  setup_net
  boot_guest
  local c rc
  while read -r c; do
    set -- $c
    rc=0
    host_case "$@" || rc=$?
    echo "case $1: host exit $rc ($(cat "$LOGS/host-$1.ms") ms)"
    sed 's/^/  host | /' "$LOGS/host-$1.log" | grep -v "ping data:" | tail -n 40 || true
    # The guest's side must be over before the next case starts on the host; out of step after
    # a failure, the rest would only wait for timeouts.
    if ! wait_guest_case "$1" $kGuestGrace; then
      echo "case $1: the guest did not finish it within ${kGuestGrace} s of the host; stopping"
      kill $QEMU_PID 2>/dev/null || true
      break
    fi
  done < "$LOGS/cases"
  wait $QEMU_PID || true
  QEMU_PID=
  tr -d '\r' < "$LOGS/guest.log" | sed -n '/RXE-CMD BEGIN/,/RXE-CMD END/p' | grep -v "^=== CASE" | sed 's/^/  guest | /' | tail -n 200
  report
}

if [ "${1:-}" = --in-netns ]; then in_netns; else prepare "$@"; fi
