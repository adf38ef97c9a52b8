#!/usr/bin/env bash
# Two ndnic processes in two network namespaces joined by a veth pair, each on net_af_packet:
# ARP resolves both ways, RoCEv2 requests cross A -> B and ACKs B -> A, checked by decoding.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
require_root "the af_packet/veth test"

NS_A=ndnicA-$RUN_ID NS_B=ndnicB-$RUN_ID
VETH_A=ndva$RUN_ID VETH_B=ndvb$RUN_ID
trap 'ip netns del $NS_A 2>/dev/null || true; ip netns del $NS_B 2>/dev/null || true' EXIT

new_netns "$NS_A"
new_netns "$NS_B"
ip link add "$VETH_A" netns "$NS_A" type veth peer name "$VETH_B" netns "$NS_B"
ip -n "$NS_A" link set "$VETH_A" up
ip -n "$NS_B" link set "$VETH_B" up

SIDE_B=(ip netns exec "$NS_B" "$GLUE_TEST" -l 1 --no-pci
        --vdev "net_af_packet0,iface=$VETH_B,qdisc_bypass=1"
        -- peer --role b --device net_af_packet0 --ip 198.18.10.2 --peer-ip 198.18.10.1)
SIDE_A=(ip netns exec "$NS_A" "$GLUE_TEST" -l 0 --no-pci
        --vdev "net_af_packet0,iface=$VETH_A,qdisc_bypass=1"
        -- peer --role a --device net_af_packet0 --ip 198.18.10.1 --peer-ip 198.18.10.2)
run_pair
