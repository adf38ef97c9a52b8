#!/usr/bin/env bash
# Two ndnic processes joined by vhost-user: net_vhost (the socket's server) and
# net_virtio_user (its client). No network namespace is involved; the socket is unique.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
require_root "the vhost/virtio_user test"

SOCK=/tmp/ndnic-vhost-$RUN_ID.sock
trap 'rm -f $SOCK' EXIT
rm -f "$SOCK"

SIDE_B=("$GLUE_TEST" -l 1 --no-pci --vdev "net_vhost0,iface=$SOCK"
        -- peer --role b --device net_vhost0 --ip 198.18.12.2 --peer-ip 198.18.12.1)
SIDE_A=("$GLUE_TEST" -l 0 --no-pci --vdev "net_virtio_user0,path=$SOCK"
        -- peer --role a --device net_virtio_user0 --ip 198.18.12.1 --peer-ip 198.18.12.2)
WAIT_FOR=$SOCK
run_pair
