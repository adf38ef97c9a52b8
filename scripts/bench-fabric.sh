#!/usr/bin/env bash
# make bench, libfabric part: fi_pingpong (FI_EP_MSG) over the ndnic provider beside libfabric's
# own tcp provider, on the same pair of ports and the same cores: two network namespaces joined
# by a veth pair; each side's fi_pingpong pinned to its own CPU; ndnic on net_af_packet over
# that veth (its own addresses, .11/.12), tcp over the kernel's (.1/.2, which also carry
# fi_pingpong's control connection for both). Prints one table of latency (usec/xfer, half a
# round trip as fi_pingpong counts it) and rate per size, and writes BUILD/bench-fabric.json.
#   scripts/bench-fabric.sh BUILD [fi_pingpong args; default -I 2000]
set -euo pipefail
BUILD=${1:?usage: $0 BUILD [fi_pingpong args]}
shift
ARGS=("$@")
[ ${#ARGS[@]} -gt 0 ] || ARGS=(-I 2000)
[ "$(id -u)" = 0 ] || { echo "bench-fabric: needs root (network namespaces)" >&2; exit 1; }
[ -f "$BUILD/fabric/libndnic-fi.so" ] || { echo "bench-fabric: no $BUILD/fabric/libndnic-fi.so" >&2; exit 1; }
export FI_PROVIDER_PATH=$(cd "$BUILD/fabric" && pwd)

NS_A=ndnic-fab-a-$$ NS_B=ndnic-fab-b-$$
DIR=$(mktemp -d /tmp/ndnic-bench-fabric.XXXXXX)
cleanup() {
  ip netns del "$NS_A" 2>/dev/null || true
  ip netns del "$NS_B" 2>/dev/null || true
  [ "${BENCH_FABRIC_KEEP:-0}" = 1 ] && echo "kept $DIR" || rm -rf "$DIR"
}
trap cleanup EXIT
ip netns add "$NS_A"
ip netns add "$NS_B"
ip link add vfa netns "$NS_A" type veth peer name vfb netns "$NS_B"
ip -n "$NS_A" addr add 198.18.80.1/24 dev vfa
ip -n "$NS_B" addr add 198.18.80.2/24 dev vfb
# A 1500-byte link: ndnic's path MTU is 1024 (DPDK 22.11's af_packet port takes no larger frame),
# while tcp's segments are not bounded by it (veth offloads segmentation): large messages favour
# tcp here by construction.
ip -n "$NS_A" link set vfa up
ip -n "$NS_B" link set vfb up
ip -n "$NS_A" link set lo up
ip -n "$NS_B" link set lo up

# run PROVIDER: one fi_pingpong pair; the client's output in $DIR/PROVIDER.log.
run() {
  local prov=$1 port=$((21000 + $$ % 20000)) a=() b=()
  if [ "$prov" = ndnic ]; then
    a=(FI_NDNIC_DEV=net_af_packet0,iface=vfa FI_NDNIC_IP=198.18.80.11 FI_NDNIC_EAL_ARGS="-l 0")
    b=(FI_NDNIC_DEV=net_af_packet0,iface=vfb FI_NDNIC_IP=198.18.80.12 FI_NDNIC_EAL_ARGS="-l 1")
  fi
  ip netns exec "$NS_A" env "${a[@]}" taskset -c 0 timeout -k 5 300 \
    fi_pingpong -p "$prov" -e msg -B "$port" "${ARGS[@]}" >"$DIR/$prov.server.log" 2>&1 &
  local pid=$! rc=0
  for _ in $(seq 200); do ip netns exec "$NS_A" ss -ltnH "sport = :$port" | grep -q . && break; sleep 0.05; done
  ip netns exec "$NS_B" env "${b[@]}" taskset -c 1 timeout -k 5 300 \
    fi_pingpong -p "$prov" -e msg -P "$port" "${ARGS[@]}" 198.18.80.1 >"$DIR/$prov.log" 2>&1 || rc=$?
  wait "$pid" || rc=$((rc ? rc : $?))
  if [ "$rc" != 0 ] || ! grep -q "usec/xfer" "$DIR/$prov.log"; then
    echo "bench-fabric: fi_pingpong -p $prov failed (exit $rc)" >&2
    sed 's/^/  [server] /' "$DIR/$prov.server.log" >&2
    sed 's/^/  [client] /' "$DIR/$prov.log" >&2
    exit 1
  fi
}
run ndnic
run tcp

python3 - "$DIR/ndnic.log" "$DIR/tcp.log" "$BUILD/bench-fabric.json" <<'PY'
import json, re, sys

def rows(path):
    # fi_pingpong: bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec
    out = {}
    for line in open(path):
        f = line.split()
        if len(f) == 8 and re.fullmatch(r"\d+[kmg]?", f[0]):
            out[f[0]] = {"mb_per_s": float(f[5]), "usec_per_xfer": float(f[6]), "mxfers_per_s": float(f[7])}
    if not out:
        sys.exit("bench-fabric: no result rows in " + path)
    return out

nd, tcp = rows(sys.argv[1]), rows(sys.argv[2])
print("fi_pingpong -e msg, veth pair, one CPU per side: ndnic (net_af_packet) vs tcp (kernel)")
print("%-6s %12s %12s %8s %12s %12s" % ("bytes", "ndnic us", "tcp us", "tcp/nd", "ndnic MB/s", "tcp MB/s"))
for size in nd:
    if size in tcp:
        a, b = nd[size], tcp[size]
        print("%-6s %12.2f %12.2f %8.2f %12.1f %12.1f" % (size, a["usec_per_xfer"], b["usec_per_xfer"],
              b["usec_per_xfer"] / a["usec_per_xfer"], a["mb_per_s"], b["mb_per_s"]))
json.dump({"ndnic": nd, "tcp": tcp}, open(sys.argv[3], "w"), indent=1)
print("JSON: " + sys.argv[3])
PY
