#!/usr/bin/env bash
# Two ndnic engines in two processes joined by vhost-user: the server on net_vhost (lcore 0)
# serves, the client on net_virtio_user (lcore 1) drives; both check, both must pass.
# Usage: run.sh [nic_peer program args, e.g. --faults 0.01]
# Environment: NIC_PEER (the binary), XPROC_EAL (extra EAL args for both, e.g.
# "--no-huge -m 512" to force ordinary memory), XPROC_KEEP=1 keeps the work directory.
set -euo pipefail
NIC_PEER=${NIC_PEER:?NIC_PEER must point at the nic_peer binary}
if [ "$(id -u)" != 0 ]; then
  echo "FAIL: the vhost/virtio_user test needs root (CI runs as root); not skipping"
  exit 1
fi

DIR=$(mktemp -d /tmp/ndnic-xproc.XXXXXX)
SOCK=$DIR/vhost.sock
pid_server=
cleanup() {
  # Only our own server, by its pid, and only if it is still running.
  [ -n "$pid_server" ] && kill "$pid_server" 2>/dev/null || true
  [ "${XPROC_KEEP:-0}" = 1 ] && echo "kept $DIR" || rm -rf "$DIR"
}
trap cleanup EXIT

read -r -a extra_eal <<<"${XPROC_EAL:-}"
# Distinct file prefixes keep the two EALs apart when memory is given explicitly
# (with no memory option, eal_init picks --in-memory or a unique prefix itself).
server_eal=(-l 0 --no-pci --vdev "net_vhost0,iface=$SOCK,queues=1" "${extra_eal[@]}")
client_eal=(-l 1 --no-pci --vdev "net_virtio_user0,path=$SOCK,queues=1" "${extra_eal[@]}")
if [ ${#extra_eal[@]} -gt 0 ]; then
  server_eal+=(--file-prefix "ndnic-xproc-s-$$")
  client_eal+=(--file-prefix "ndnic-xproc-c-$$")
fi

"$NIC_PEER" "${server_eal[@]}" -- --role server --device net_vhost0 --ip 198.18.50.1 \
  --peer-ip 198.18.50.2 --channel "$DIR/side.sock" "$@" >"$DIR/server.log" 2>&1 &
pid_server=$!
# virtio_user connects to the vhost socket once, at start-up: wait until the server made it.
for _ in $(seq 200); do [ -S "$SOCK" ] && break; sleep 0.05; done

rc_client=0 rc_server=0
"$NIC_PEER" "${client_eal[@]}" -- --role client --device net_virtio_user0 --ip 198.18.50.2 \
  --peer-ip 198.18.50.1 --channel "$DIR/side.sock" "$@" >"$DIR/client.log" 2>&1 || rc_client=$?
wait "$pid_server" || rc_server=$?
pid_server=
sed 's/^/[server] /' "$DIR/server.log"
sed 's/^/[client] /' "$DIR/client.log"
echo "server exit $rc_server, client exit $rc_client"
[ "$rc_server" = 0 ] && [ "$rc_client" = 0 ]
