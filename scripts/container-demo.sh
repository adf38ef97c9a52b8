#!/usr/bin/env bash
# make container-demo: the two-node demo of docker/compose.yaml in real containers, with podman.
#
#   podman, runc, debootstrap, nftables (scripts/install-deps.sh, only what is missing)
#   -> a Debian 12 base image made with debootstrap (no registry needed; cached)
#   -> the ndnic image from docker/Dockerfile, built with the host's network (no NAT)
#   -> an internal network 198.18.6.0/24 (no DNS, no gateway to anything)
#   -> two containers, ndnic on each one's eth0 through af_packet: the server runs the ndperf
#      server then nd_demo's passive side, the client the ndperf client then the active side
#   -> checks what both printed, prints a summary, removes the containers, the network, the nft
#      guard and restores the sysctl netavark changed. Images stay cached (see the last lines).
#
# The containers run exactly the commands, addresses and capabilities of docker/compose.yaml:
# they are read from it (and checked) here, so the Docker and podman demos cannot drift apart.
#
# Root, non-interactive. Exit 0 when the demo did what it should, 1 when it did not, 77 (skip)
# when podman cannot be installed or cannot run a container here.
# Usage: scripts/container-demo.sh [LOG_DIR]    (default /var/tmp/ndnic-container-demo/logs)
# Environment: NDNIC_CONTAINER_KEEP=1 keeps the containers and network for a look afterwards.
set -euo pipefail

kRepo=$(cd "$(dirname "$0")/.." && pwd)
kWork=/var/tmp/ndnic-container-demo
kLogs=${1:-$kWork/logs}
kCompose=$kRepo/docker/compose.yaml
kBaseImage=localhost/ndnic-base:bookworm
kImage=localhost/ndnic:latest
kNetwork=ndnic-demo
kGuardTable=ndnic_container_demo
kTimeoutS=180                     # per container: the demo itself takes seconds
kPackages=(podman runc debootstrap nftables python3-yaml)
kKeep=${NDNIC_CONTAINER_KEEP:-0}

T0=$(date +%s.%N)
step() { awk -v a="$(date +%s.%N)" -v b="$T0" -v m="$*" 'BEGIN { printf "\n=== [%5.1fs] %s\n", a - b, m }'; }
skip() {
  echo
  echo "################################################################################"
  echo "## container-demo SKIPPED: $*"
  echo "################################################################################"
  exit 77
}
fail() { echo "container-demo: FAIL: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || skip "needs root (rootful podman, nft, sysctl)"
mkdir -p "$kWork" "$kLogs"
rm -f "$kLogs"/*.log

step "1. podman, runc, debootstrap, nftables"
if ! "$kRepo/scripts/install-deps.sh" "${kPackages[@]}"; then
  skip "could not install ${kPackages[*]} (no Debian archive reachable?)"
fi
podman --version

# The machine's own tweaks, measured: rootful podman sets nofile=1048576 and nproc=4194304,
# which setrlimit refuses without CAP_SYS_RESOURCE; crun 1.8 refuses the hybrid cgroup layout.
nofile=$(ulimit -Hn)
[ "$nofile" = unlimited ] && nofile=1048576
cat >"$kWork/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=${nofile}:${nofile}", "nproc=32768:32768"]
[engine]
runtime = "runc"
EOF
export CONTAINERS_CONF=$kWork/containers.conf

step "2. what the containers run, read from docker/compose.yaml"
# Prints shell assignments after checking that the file describes the demo this script runs.
plan=$(/usr/bin/python3 - "$kCompose" <<'PY'
import ipaddress, shlex, sys, yaml

path = sys.argv[1]
with open(path) as f:
    doc = yaml.safe_load(f)

def need(ok, what):
    if not ok:
        sys.exit(f"{path}: {what}")

need(isinstance(doc, dict), "not a YAML mapping")
services = doc.get("services") or {}
need(set(services) == {"server", "client"}, f"services are {sorted(services)}, expected client and server")
networks = doc.get("networks") or {}
need(len(networks) == 1, "expected exactly one network")
(net_name, net), = networks.items()
need(net.get("internal") is True, f"network {net_name} must be internal: the demo talks to nothing else")
subnets = [c["subnet"] for c in (net.get("ipam") or {}).get("config", [])]
need(len(subnets) == 1, f"network {net_name}: expected one ipam subnet")
subnet = ipaddress.ip_network(subnets[0])
need(subnet.subnet_of(ipaddress.ip_network("198.18.0.0/15")), f"subnet {subnet} is outside 198.18.0.0/15")
print(f"kSubnet={subnet}")

def words(cmd):
    # ["sh", "-c", "a && b"] -> [["a", ...], ["b", ...]]
    need(isinstance(cmd, list) and cmd[:2] == ["sh", "-c"] and len(cmd) == 3, "command must be [sh, -c, '...']")
    return [shlex.split(part) for part in cmd[2].split("&&")]

def option(argv, name):
    need(name in argv and argv.index(name) + 1 < len(argv), f"{' '.join(argv)}: no {name}")
    return argv[argv.index(name) + 1]

ips = {}
for name, svc in services.items():
    need("network_mode" not in svc and not svc.get("privileged"), f"{name}: no host network, not privileged")
    need(sorted(svc.get("cap_add", [])) == ["IPC_LOCK", "NET_ADMIN", "NET_RAW"],
         f"{name}: cap_add must be exactly NET_RAW, NET_ADMIN, IPC_LOCK")
    need(list(svc.get("networks", {})) == [net_name], f"{name}: must be on network {net_name} only")
    ip = ipaddress.ip_address(svc["networks"][net_name]["ipv4_address"])
    need(ip in subnet, f"{name}: {ip} is not in {subnet}")
    ips[name] = str(ip)
    mac = svc.get("mac_address", "")
    need(len(mac.split(":")) == 6, f"{name}: mac_address missing")
    print(f"k{name.capitalize()}Ip={ip}")
    print(f"k{name.capitalize()}Mac={mac}")
    print(f"k{name.capitalize()}Caps={','.join(svc['cap_add'])}")
    print(f"k{name.capitalize()}Cmd=({' '.join(shlex.quote(w) for w in svc['command'])})")

expected = {"server": (["ndperf", "--server"], ["nd_demo", "--role", "passive"]),
            "client": (["ndperf", "--client"], ["nd_demo", "--role", "active"])}
for name, (perf, demo) in expected.items():
    steps = words(services[name]["command"])
    need(len(steps) == 2, f"{name}: expected two commands, ndperf then nd_demo")
    for argv, want in zip(steps, (perf, demo)):
        need(argv[0] == want[0] and all(w in argv for w in want[1:]), f"{name}: expected {' '.join(want)} ...")
        need(option(argv, "--ip") == ips[name], f"{name}: {argv[0]} --ip must be the container's {ips[name]}")
        need(option(argv, "--dev").endswith("iface=eth0"), f"{name}: {argv[0]} must use eth0")
client_perf, client_demo = words(services["client"]["command"])
need(option(client_perf, "--client") == ips["server"], "client: ndperf --client must name the server")
need(option(client_demo, "--peer") == ips["server"], "client: nd_demo --peer must name the server")
# What the ndperf client's tables must show: one row per test, each with -n iterations.
tests = option(client_perf, "-T").split(",")
print(f"kPerfTests={len(tests)}")
print(f"kPerfIters={int(option(client_perf, '-n'))}")
PY
) || fail "docker/compose.yaml does not describe the demo (above)"
eval "$plan"
kGateway=${kSubnet%.*}.1
echo "network $kSubnet; server $kServerIp $kServerMac; client $kClientIp $kClientMac; caps $kServerCaps"
printf 'server: %s\nclient: %s\n' "${kServerCmd[2]}" "${kClientCmd[2]}"

# Everything from here on is undone on exit, whatever happens.
ip_forward0=$(cat /proc/sys/net/ipv4/ip_forward)
uplink=$(ip route show default | awk '{ print $5; exit }')
uplink=${uplink:-eth0}
cleanup() {
  set +e
  if [ "$kKeep" != 1 ]; then
    podman rm -f -t 0 ndnic-demo-server ndnic-demo-client >/dev/null 2>&1
    podman network rm -f "$kNetwork" >/dev/null 2>&1
  fi
  nft delete table inet "$kGuardTable" 2>/dev/null
  # netavark turns forwarding on even for an internal network.
  echo "$ip_forward0" >/proc/sys/net/ipv4/ip_forward
  rm -rf "$kWork/rootfs"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# Belt and braces: nothing from a podman bridge goes out of the uplink (no NAT is set up either).
nft delete table inet "$kGuardTable" 2>/dev/null || true
nft -f - <<EOF || skip "nft cannot add its guard table here (no nf_tables?)"
table inet $kGuardTable {
  chain guard {
    type filter hook forward priority -10; policy accept;
    iifname "podman*" oifname "$uplink" counter drop
  }
}
EOF
podman info >/dev/null 2>"$kLogs/podman-info.log" || { cat "$kLogs/podman-info.log"; skip "podman does not run here"; }

step "3. base image $kBaseImage (debootstrap once, cached after)"
if podman image exists "$kBaseImage"; then
  echo "cached"
else
  mirror=$( (cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null || true) |
    grep -E '^(URIs:|deb )' | grep -oE '(https?|file)://[^ ]+/debian/?( |$)' | awk 'NR == 1 { print $1 }' || true)
  [ -n "$mirror" ] || skip "no Debian mirror in the apt sources for debootstrap"
  rm -rf "$kWork/rootfs"
  if ! debootstrap --variant=minbase bookworm "$kWork/rootfs" "$mirror" >"$kLogs/debootstrap.log" 2>&1; then
    tail -20 "$kLogs/debootstrap.log"
    skip "debootstrap from $mirror failed"
  fi
  # The image sees the archive the way the host does: its sources and its proxy/validity settings.
  rm -f "$kWork/rootfs/etc/apt/sources.list"
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    if [ -f "$f" ] && grep -qE '^(URIs:|deb ).*/debian(-security)?/?( |$)' "$f"; then cp "$f" "$kWork/rootfs$f"; fi
  done
  for f in /etc/apt/apt.conf.d/*; do
    if grep -qiE 'proxy|Check-Valid-Until|Check-Date' "$f"; then cp "$f" "$kWork/rootfs/etc/apt/apt.conf.d/"; fi
  done
  rm -f "$kWork/rootfs/var/cache/apt/archives/"*.deb
  tar -C "$kWork/rootfs" -c . | podman import --change 'CMD ["/bin/bash"]' - "$kBaseImage" >/dev/null
  rm -rf "$kWork/rootfs"
fi
podman run --rm --network none "$kBaseImage" grep PRETTY_NAME /etc/os-release ||
  skip "podman cannot run a container here"

step "4. the ndnic image $kImage (docker/Dockerfile, built with the host's network)"
if ! podman build --network=host --build-arg BASE="$kBaseImage" -f "$kRepo/docker/Dockerfile" -t "$kImage" \
  "$kRepo" >"$kLogs/build.log" 2>&1; then
  tail -30 "$kLogs/build.log"
  fail "building the image failed (log: $kLogs/build.log)"
fi
podman images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E "ndnic"

step "5. internal network $kNetwork $kSubnet"
podman rm -f -t 0 ndnic-demo-server ndnic-demo-client >/dev/null 2>&1 || true
podman network rm -f "$kNetwork" >/dev/null 2>&1 || true
podman network create --internal --disable-dns --subnet "$kSubnet" --gateway "$kGateway" "$kNetwork" >/dev/null
podman network inspect "$kNetwork" --format '{{.Name}}: {{range .Subnets}}{{.Subnet}}{{end}} internal={{.Internal}}'

step "6. the demo: server $kServerIp, client $kClientIp"
run_node() {  # NAME IP MAC CAPS COMMAND...
  local name=$1 ip=$2 mac=$3 caps=$4
  shift 4
  podman run -d --name "ndnic-demo-$name" --network "$kNetwork" --ip "$ip" --mac-address "$mac" \
    --cap-add "$caps" "$kImage" timeout "$kTimeoutS" "$@" >/dev/null
}
run_node server "$kServerIp" "$kServerMac" "$kServerCaps" "${kServerCmd[@]}"
run_node client "$kClientIp" "$kClientMac" "$kClientCaps" "${kClientCmd[@]}"
client_rc=$(podman wait ndnic-demo-client)
# The server ends right after the client; one left waiting for a client that failed is stopped.
if ! server_rc=$(timeout 60 podman wait ndnic-demo-server); then
  podman stop -t 2 ndnic-demo-server >/dev/null
  server_rc=$(podman wait ndnic-demo-server)
fi
podman logs ndnic-demo-server >"$kLogs/server.log" 2>&1
podman logs ndnic-demo-client >"$kLogs/client.log" 2>&1
leaked=$(nft list chain inet "$kGuardTable" guard | awk '/counter/ { for (i = 1; i < NF; i++) if ($i == "packets") print $(i + 1) }')
for n in server client; do
  echo "--- $n (log: $kLogs/$n.log)"
  cat "$kLogs/$n.log"
done

step "7. the result"
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
  echo "  FAIL  $leaked packets from a podman bridge tried to leave through $uplink"
  failures=$((failures + 1))
fi

step "8. cleanup"
cleanup
trap - EXIT
if [ "$kKeep" = 1 ]; then
  echo "kept (NDNIC_CONTAINER_KEEP=1): containers ndnic-demo-server and ndnic-demo-client, network $kNetwork;"
  echo "  remove them with: podman rm ndnic-demo-server ndnic-demo-client && podman network rm $kNetwork"
else
  echo "removed the containers and network $kNetwork"
fi
echo "removed nft table $kGuardTable; net.ipv4.ip_forward is $ip_forward0 again"
echo "images kept for the next run: $kImage $kBaseImage (podman storage, /var/lib/containers);"
echo "  remove them with: CONTAINERS_CONF=$kWork/containers.conf podman rmi $kImage $kBaseImage"
echo "logs: $kLogs"
if [ "$failures" = 0 ]; then
  step "PASS: ndperf ran between the two containers and the window was SendAndInvalidate-d"
  exit 0
fi
step "FAIL: $failures check(s) failed"
exit 1
