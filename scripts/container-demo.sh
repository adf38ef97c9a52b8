#!/usr/bin/env bash
# make container-demo: the two-node demo of docker/compose.yaml in real containers, with the
# Docker engine where it is installed or can be, with podman otherwise.
#
#   ENGINE=docker  Debian 12's docker.io and docker-compose 1.29: the daemon is started here if
#                  none runs; the services run through docker-compose from the file unchanged
#   ENGINE=podman  rootful podman 4.3: the services run with `podman run` from what
#                  container-demo/compose_plan.py reads out of the file
#   (unset)        Docker, and podman where Docker cannot be installed or started
#
#   -> packages (scripts/install-deps.sh, only what is missing)
#   -> a Debian 12 base image made with debootstrap (no registry needed; the root file system
#      and each engine's images are cached)
#   -> the ndnic image from docker/Dockerfile, built with the host's network (no NAT)
#   -> the internal network 198.18.6.0/24 and two containers, ndnic on each one's eth0 through
#      af_packet: the server runs the ndperf server then nd_demo's passive side, the client the
#      ndperf client then the active side
#   -> the same 17 checks for both engines on what the containers printed, plus what the engine
#      made of the file (addresses, MACs, capabilities, an internal network)
#   -> removes the containers and the network, stops a daemon it started, and puts back what
#      the engine changed on the host (container-demo/host_state.sh), then checks that it did.
#
# Root, non-interactive. Exit 0 when the demo did what it should, 1 when it did not, 77 (skip,
# with a banner) when the engine asked for (or neither engine) can be installed or run here.
# Usage: [ENGINE=docker|podman] scripts/container-demo.sh [LOG_DIR]
#        (LOG_DIR default /var/tmp/ndnic-container-demo/logs[-ENGINE])
# Environment: NDNIC_CONTAINER_KEEP=1 keeps the containers, network and daemon for a look.
set -euo pipefail
export LC_ALL=C  # sort and comm agree on the order

kRepo=$(cd "$(dirname "$0")/.." && pwd)
kHere=$kRepo/scripts/container-demo
kWork=/var/tmp/ndnic-container-demo
kCompose=$kRepo/docker/compose.yaml
kGuardTable=ndnic_container_demo
kTimeoutS=180                     # per container: the demo itself takes about a minute
kRootfs=$kWork/base-bookworm.tar  # debootstrap's Debian 12, shared by both engines
kCommonPackages=(debootstrap nftables python3-yaml)
kKeep=${NDNIC_CONTAINER_KEEP:-0}
engine=${ENGINE:-auto}
case "$engine" in
  auto | docker | podman) ;;
  *) echo "ENGINE must be docker or podman, not '$engine'" >&2; exit 2 ;;
esac
kLogs=${1:-$kWork/logs${ENGINE:+-$ENGINE}}

T0=$(date +%s.%N)
step() { awk -v a="$(date +%s.%N)" -v b="$T0" -v m="$*" 'BEGIN { printf "\n=== [%5.1fs] %s\n", a - b, m }'; }
banner() {
  echo
  echo "################################################################################"
  echo "## $*"
  echo "################################################################################"
}
skip() { banner "container-demo SKIPPED: $*"; exit 77; }
fail() { echo "container-demo: FAIL: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || skip "needs root (container engines, nft, sysctl)"
mkdir -p "$kWork" "$kLogs"
rm -f "$kLogs"/*.log "$kLogs"/*.inspect
source "$kHere/host_state.sh"
host_state_release_own "$kWork"
host_state_save "$kWork/host-before"

step "1. debootstrap, nftables, python3-yaml"
"$kRepo/scripts/install-deps.sh" "${kCommonPackages[@]}" ||
  skip "could not install ${kCommonPackages[*]} (no Debian archive reachable?)"

step "2. what the containers run, read from docker/compose.yaml"
plan=$(/usr/bin/python3 "$kHere/compose_plan.py" "$kCompose") || fail "docker/compose.yaml does not describe the demo (above)"
eval "$plan"
echo "network $kSubnet; server $kServerIp $kServerMac; client $kClientIp $kClientMac; caps $kServerCaps"
printf 'server: %s\nclient: %s\n' "${kServerCmd[2]}" "${kClientCmd[2]}"

# Everything from here on is undone on exit, whatever happens.
uplink=$(ip route show default | awk '{ print $5; exit }')
uplink=${uplink:-eth0}
engine_stop() { :; }
engine_down() { :; }
cleanup() {
  set +e
  if [ "$kKeep" != 1 ]; then
    engine_down
    engine_stop
  fi
  nft delete table inet "$kGuardTable" 2>/dev/null
  if [ "$kKeep" != 1 ]; then host_state_restore "$kWork/host-before"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step "3. the engine (ENGINE=$engine)"
try_engine() {  # NAME: installs and starts it; non-zero with the reason in $why
  source "$kHere/engine_$1.sh"
  local pkgs
  read -r -a pkgs <<<"$(engine_packages)"
  if ! "$kRepo/scripts/install-deps.sh" "${pkgs[@]}" 2>"$kLogs/install-$1.log"; then
    why="could not install ${pkgs[*]} ($(tail -1 "$kLogs/install-$1.log"))"
    return 1
  fi
  if ! engine_start 2>"$kLogs/start-$1.log"; then
    why=$(tail -3 "$kLogs/start-$1.log" | tr '\n' ' ')
    engine_stop
    return 1
  fi
  engine_images
  used=$1
}
why=""
case "$engine" in
  auto)
    if ! try_engine docker; then
      banner "Docker cannot run here ($why): the demo runs with podman instead"
      try_engine podman || skip "neither Docker nor podman can run here: $why"
    fi ;;
  *) try_engine "$engine" || skip "$engine cannot run here: $why" ;;
esac
echo "engine: $used"

# Belt and braces: nothing from a container bridge goes out of the uplink (no NAT is set up).
nft delete table inet "$kGuardTable" 2>/dev/null || true
nft -f - <<NFT || skip "nft cannot add its guard table here (no nf_tables?)"
table inet $kGuardTable {
  chain guard {
    type filter hook forward priority -10; policy accept;
    iifname "podman*" oifname "$uplink" counter drop
    iifname "br-*" oifname "$uplink" counter drop
    iifname "docker*" oifname "$uplink" counter drop
  }
}
NFT

step "4. base image $kBaseImage (debootstrap once, cached after)"
if engine_has_image "$kBaseImage"; then
  echo "cached"
else
  if [ ! -s "$kRootfs" ]; then
    mirror=$( (cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null || true) |
      grep -E '^(URIs:|deb )' | grep -oE '(https?|file)://[^ ]+/debian/?( |$)' | awk 'NR == 1 { print $1 }' || true)
    [ -n "$mirror" ] || skip "no Debian mirror in the apt sources for debootstrap"
    rootfs=$kWork/rootfs
    rm -rf "$rootfs"
    if ! debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$kLogs/debootstrap.log" 2>&1; then
      tail -20 "$kLogs/debootstrap.log"
      rm -rf "$rootfs"
      skip "debootstrap from $mirror failed"
    fi
    # The image sees the archive the way the host does: its sources and its proxy/validity settings.
    rm -f "$rootfs/etc/apt/sources.list"
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
      if [ -f "$f" ] && grep -qE '^(URIs:|deb ).*/debian(-security)?/?( |$)' "$f"; then cp "$f" "$rootfs$f"; fi
    done
    for f in /etc/apt/apt.conf.d/*; do
      if grep -qiE 'proxy|Check-Valid-Until|Check-Date' "$f"; then cp "$f" "$rootfs/etc/apt/apt.conf.d/"; fi
    done
    rm -f "$rootfs/var/cache/apt/archives/"*.deb
    tar -C "$rootfs" -cf "$kRootfs.tmp" . && mv "$kRootfs.tmp" "$kRootfs"
    rm -rf "$rootfs"
  fi
  engine_import "$kBaseImage" <"$kRootfs"
fi
engine_run_once "$kBaseImage" grep PRETTY_NAME /etc/os-release || skip "$used cannot run a container here"

step "5. the ndnic image $kImage (docker/Dockerfile, built with the host's network)"
if ! engine_build "$kLogs/build.log"; then
  tail -30 "$kLogs/build.log"
  fail "building the image failed (log: $kLogs/build.log)"
fi
echo "built (log: $kLogs/build.log)"

step "6. the demo on the internal network $kSubnet: server $kServerIp, client $kClientIp"
engine_up || fail "$used could not start the services"
# What the engine made of the file, read while the containers run (a stopped one has no address).
for n in server client; do engine_inspect "$n" >"$kLogs/$n.inspect" 2>&1 || true; done
client_rc=$(engine_wait client)
# The server ends right after the client; one left waiting for a client that failed is stopped.
server_rc=$(kTimeoutS=60 engine_wait server)
engine_logs server >"$kLogs/server.log" 2>&1
engine_logs client >"$kLogs/client.log" 2>&1
network_internal=$(engine_network_internal 2>&1 || true)
leaked=$(nft list chain inet "$kGuardTable" guard |
  awk '/counter/ { for (i = 1; i < NF; i++) if ($i == "packets") s += $(i + 1) } END { print s + 0 }')
for n in server client; do
  echo "--- $n (log: $kLogs/$n.log)"
  cat "$kLogs/$n.log"
done

step "7. the result ($used)"
failures=0
expect() {  # WHAT LOG REGEX: the log has a line matching REGEX
  if grep -qE "$3" "$kLogs/$2.log"; then
    printf '  ok    %s\n' "$1"
  else
    printf '  FAIL  %s (no line /%s/ in %s.log)\n' "$1" "$3" "$2"
    failures=$((failures + 1))
  fi
}
[ "$server_rc" = 0 ] && echo "  ok    server exited 0" || { echo "  FAIL  server exited $server_rc"; failures=$((failures + 1)); }
[ "$client_rc" = 0 ] && echo "  ok    client exited 0" || { echo "  FAIL  client exited $client_rc"; failures=$((failures + 1)); }
# ndperf's tables (perftest's layout): a title line "<name> Test", a header, one row per size.
# Each row here: the title, #bytes, #iterations and the main figure (BW average, t_typical or
# Cycles/sec), which must be positive.
awk '
  /^ +[^ ].* Test$/ { sub(/^ +/, ""); sub(/ Test$/, ""); title = $0; next }
  /^ #bytes/ { bw = /BW average/; lat = /t_typical/; next }
  title != "" && /^ [0-9]+ +[0-9]+ / {
    figure = bw ? $4 : (lat ? $5 : $3); unit = bw ? "Gb/s average" : (lat ? "us typical" : "cycles/s")
    printf "%s\t%s\t%s\t%s\t%s\n", title, $1, $2, figure, unit; title = ""
  }' "$kLogs/client.log" >"$kLogs/ndperf-rows.tsv"
rows=0
while IFS=$'\t' read -r title bytes iters figure unit; do
  ok=$(awk -v f="$figure" -v i="$iters" -v n="$kPerfIters" 'BEGIN { print (f > 0 && i == n) ? "ok  " : "FAIL" }')
  printf '  %s  ndperf %-44s %7s B x %s: %s %s\n' "$ok" "$title" "$bytes" "$iters" "$figure" "$unit"
  [ "$ok" = "ok  " ] && rows=$((rows + 1))
done <"$kLogs/ndperf-rows.tsv"
if [ "$rows" != "$kPerfTests" ]; then
  echo "  FAIL  ndperf client: $rows good result rows, expected $kPerfTests (one per test, $kPerfIters iterations)"
  failures=$((failures + 1))
fi
expect "ndperf server: served all $kPerfTests tests" server "^ndperf: serving [a-z_]+ \\($kPerfTests of $kPerfTests\\)\$"
expect "nd_demo active: SendAndInvalidate completed" client \
  '^  peer   ok   SendAndInvalidate\(token 0x[0-9a-f]+\): ND_SUCCESS \(0x00000000\)$'
expect "nd_demo passive: the window's invalidate result first" server \
  "^  owner  ok   result 1: the window's invalidate result, ND_SUCCESS \\(0x00000000\\)\$"
expect "nd_demo passive: then the receive" server '^  owner  ok   result 2: the receive, 16 bytes: "done, thank you"$'
expect "nd_demo active: the old token refused" client '^  peer   ok   RDMA WRITE through the old token: ND_REMOTE_ERROR '
expect "nd_demo passive: the refused WRITE wrote nothing" server '^  owner  ok   the refused WRITE left the window as it was'
expect "nd_demo passive: the new token works" server '^  owner  ok   the peer.s WRITE through the new token 0x[0-9a-f]+ is in the window'
expect "nd_demo active: every step" client '^nd_demo: every step did what it should$'
expect "nd_demo passive: every step" server '^nd_demo: every step did what it should$'
if [ "${leaked:-0}" != 0 ]; then
  echo "  FAIL  $leaked packets from a container bridge tried to leave through $uplink"
  failures=$((failures + 1))
fi

echo "  what $used made of docker/compose.yaml:"
honoured() {  # NAME IP MAC CAPS: the container got them (the capabilities among others)
  local ip="" mac="" caps="" want_caps
  read -r ip mac caps <"$kLogs/$1.inspect" || true
  caps=$(echo "$caps" | tr -d '[]' | tr ', ' '\n\n' | sed 's/^CAP_//' | grep . | sort | paste -sd, -) || true
  want_caps=$(echo "$4" | tr ',' '\n' | sort | paste -sd, -)
  if [ "$ip" = "$2" ] && [ "${mac,,}" = "${3,,}" ] && [ -z "$(comm -23 <(echo "$want_caps" | tr , '\n') <(echo "$caps" | tr , '\n'))" ]; then
    printf '  ok    %s: address %s, MAC %s, capabilities %s among its own\n' "$1" "$ip" "$mac" "$want_caps"
  else
    printf '  FAIL  %s: got "%s", the file asks for "%s %s %s"\n' "$1" "$(cat "$kLogs/$1.inspect")" "$2" "$3" "$want_caps"
    failures=$((failures + 1))
  fi
}
honoured server "$kServerIp" "$kServerMac" "$kServerCaps"
honoured client "$kClientIp" "$kClientMac" "$kClientCaps"
if [ "$network_internal" = true ]; then
  echo "  ok    network $(engine_network) is internal"
else
  echo "  FAIL  network $(engine_network) is not internal ($network_internal)"
  failures=$((failures + 1))
fi

step "8. cleanup"
trap - EXIT
cleanup
if [ "$kKeep" = 1 ]; then
  echo "kept (NDNIC_CONTAINER_KEEP=1): the containers, the network and the daemon; remove them with:"
  echo "  $(engine_keep_hint)"
elif host_state_diff "$kWork/host-before"; then
  echo "  ok    the host is as before the demo (forwarding and bridge sysctls, nft/iptables rules, links, mounts)"
else
  echo "  FAIL  the host differs from before the demo (above)"
  failures=$((failures + 1))
fi
echo "images kept for the next run: $kImage $kBaseImage; remove them with:"
echo "  $(engine_rmi_hint)"
echo "logs: $kLogs"
if [ "$failures" = 0 ]; then
  step "PASS ($used): ndperf ran between the two containers and the window was SendAndInvalidate-d"
  exit 0
fi
step "FAIL ($used): $failures check(s) failed"
exit 1
