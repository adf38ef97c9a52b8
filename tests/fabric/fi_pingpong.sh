#!/usr/bin/env bash
# The ndnic libfabric provider as libfabric's own tools see it: fi_info lists it (and says why
# not when FI_NDNIC_DEV is missing), and fi_pingpong runs between two processes joined by
# vhost-user: FI_EP_MSG on ndnic alone, and FI_EP_RDM on ofi_rxm layered over it.
# fi_pingpong brings its provider up only after its TCP control connection (over loopback) is
# made, and the client only after the server sent its address on it: so the server's port is a
# vhost-user *client* (net_vhost client=1, which retries until the socket exists) and the
# client's a virtio_user *server* (server=1: it makes the socket and waits for the vhost side).
# Usage: fi_pingpong.sh PROVIDER_DIR info|msg|rdm [fi_pingpong args, e.g. -S all -I 100]
# Environment: FABRIC_KEEP=1 keeps the work directory (logs).
set -euo pipefail
PROV_DIR=${1:?usage: fi_pingpong.sh PROVIDER_DIR info|msg|rdm}
MODE=${2:?usage: fi_pingpong.sh PROVIDER_DIR info|msg|rdm}
shift 2
if [ "$(id -u)" != 0 ]; then
  echo "FAIL: vhost-user ports need root (CI runs as root); not skipping"
  exit 1
fi
[ -f "$PROV_DIR/libndnic-fi.so" ] || { echo "FAIL: no $PROV_DIR/libndnic-fi.so"; exit 1; }
export FI_PROVIDER_PATH=$PROV_DIR

DIR=$(mktemp -d /tmp/ndnic-fabric.XXXXXX)
SOCK=$DIR/vhost.sock
pid_server=
cleanup() {
  # Only our own server, by its pid, and only if it is still running.
  [ -n "$pid_server" ] && kill "$pid_server" 2>/dev/null || true
  [ "${FABRIC_KEEP:-0}" = 1 ] && echo "kept $DIR" || rm -rf "$DIR"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

SERVER_IP=198.18.70.1
CLIENT_IP=198.18.70.2
server_env=(FI_NDNIC_DEV="net_vhost0,iface=$SOCK,queues=1,client=1" FI_NDNIC_IP=$SERVER_IP FI_NDNIC_EAL_ARGS="-l 0")
client_env=(FI_NDNIC_DEV="net_virtio_user0,path=$SOCK,queues=1,server=1" FI_NDNIC_IP=$CLIENT_IP FI_NDNIC_EAL_ARGS="-l 1")

case $MODE in
  info)
    out=$(env "${server_env[@]}" timeout -k 5 60 fi_info -p ndnic 2>&1) || fail "fi_info -p ndnic exited $?: $out"
    echo "$out"
    grep -q "provider: ndnic" <<<"$out" || fail "fi_info does not list ndnic"
    grep -q "type: *FI_EP_MSG" <<<"$out" || fail "ndnic offers no FI_EP_MSG"
    # The provider lives in someone else's program: nothing of its own on that program's stdout.
    out=$(env "${server_env[@]}" timeout -k 5 60 fi_info -p ndnic 2>/dev/null) || fail "fi_info -p ndnic exited $?"
    ! grep -q "^ndnic" <<<"$out" || fail "the provider wrote on the application's stdout: $(grep '^ndnic' <<<"$out")"
    out=$(env "${server_env[@]}" timeout -k 5 60 fi_info -p ndnic -v 2>&1) || fail "fi_info -p ndnic -v exited $?"
    grep -q "addr_format: FI_SOCKADDR_IN" <<<"$out" || fail "ndnic's address format is not FI_SOCKADDR_IN"
    grep -q "cq_data_size: 4" <<<"$out" || fail "ndnic does not say its 4 bytes of CQ data"
    out=$(env "${server_env[@]}" timeout -k 5 60 fi_info -p "ndnic;ofi_rxm" -t FI_EP_RDM 2>&1) ||
      fail "fi_info -p 'ndnic;ofi_rxm' exited $?: $out"
    grep -q "provider: ndnic;ofi_rxm" <<<"$out" || fail "ofi_rxm does not layer over ndnic: $out"
    # libfabric prints FI_PROVIDER_PATH with its separators as NUL bytes: not for a shell variable.
    out=$(timeout -k 5 60 fi_info -e 2>&1 | tr -d '\0') || fail "fi_info -e exited $?"
    for v in FI_NDNIC_DEV FI_NDNIC_IP FI_NDNIC_EAL_ARGS FI_NDNIC_MTU FI_NDNIC_LCORE FI_NDNIC_RNR_RETRY; do
      grep -q "$v" <<<"$out" || fail "fi_info -e does not list $v"
    done
    # Without a device the provider says so and lists nothing.
    if out=$(env -u FI_NDNIC_DEV FI_NDNIC_IP=$SERVER_IP timeout -k 5 60 fi_info -p ndnic 2>&1); then
      fail "fi_info -p ndnic succeeded without FI_NDNIC_DEV: $out"
    fi
    grep -q "FI_NDNIC_DEV is not set" <<<"$out" || fail "no clear message without FI_NDNIC_DEV: $out"
    if out=$(env "${server_env[@]}" FI_NDNIC_IP=300.1.2.3 timeout -k 5 60 fi_info -p ndnic 2>&1); then
      fail "fi_info -p ndnic succeeded with a bad FI_NDNIC_IP: $out"
    fi
    grep -q "FI_NDNIC_IP=300.1.2.3 is not an IPv4 address" <<<"$out" || fail "no clear message for a bad FI_NDNIC_IP: $out"
    echo "PASS: fi_info"
    exit 0
    ;;
  msg) prov=ndnic ep=msg ;;
  rdm) prov="ndnic;ofi_rxm" ep=rdm ;;
  *) fail "unknown mode $MODE" ;;
esac

# fi_pingpong's control channel is TCP over loopback; a port of our own keeps parallel runs apart.
CTRL_PORT=$((20000 + $$ % 20000))
env "${server_env[@]}" timeout -k 5 200 fi_pingpong -p "$prov" -e "$ep" -B "$CTRL_PORT" "$@" >"$DIR/server.log" 2>&1 &
pid_server=$!
# The client connects to the control port once: wait until the server listens on it.
for _ in $(seq 200); do ss -ltnH "sport = :$CTRL_PORT" | grep -q . && break; sleep 0.05; done
ss -ltnH "sport = :$CTRL_PORT" | grep -q . || { cat "$DIR/server.log"; fail "the server does not listen"; }

rc_client=0 rc_server=0
env "${client_env[@]}" timeout -k 5 200 fi_pingpong -p "$prov" -e "$ep" -P "$CTRL_PORT" "$@" 127.0.0.1 \
  >"$DIR/client.log" 2>&1 || rc_client=$?
wait "$pid_server" || rc_server=$?
pid_server=
sed 's/^/[server] /' "$DIR/server.log"
sed 's/^/[client] /' "$DIR/client.log"
echo "server exit $rc_server, client exit $rc_client"
[ "$rc_server" = 0 ] && [ "$rc_client" = 0 ] || fail "fi_pingpong -p '$prov' -e $ep"
# Each side prints a result table: a header and at least one row of figures.
for side in server client; do
  grep -q "usec/xfer" "$DIR/$side.log" || fail "$side printed no results"
  grep -qE "^[0-9]+[kmg]? +[0-9]+" "$DIR/$side.log" || fail "$side printed no result rows"
done
echo "PASS: fi_pingpong -p '$prov' -e $ep"
