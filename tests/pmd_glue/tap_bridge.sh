#!/usr/bin/env bash
# Two net_tap ports of one process, bridged by the kernel inside a namespace of their own.
# The bridge has an address too, so ndnic also resolves a kernel host by ARP.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
require_root "the net_tap test"

NS=ndnicT-$RUN_ID
trap 'ip netns del $NS 2>/dev/null || true' EXIT
new_netns "$NS"

TAP_A=ndtA$RUN_ID TAP_B=ndtB$RUN_ID BR=ndbr$RUN_ID
# net_tap gives the kernel's tap device the port's own MAC, and a bridge delivers frames for its
# ports' MACs to itself: the kernel ends of the taps and the bridge get addresses of their own.
SETUP="ip link set $TAP_A address 02:00:5e:18:14:fa && ip link set $TAP_B address 02:00:5e:18:14:fb && \
ip link add $BR address 02:00:5e:18:14:fe type bridge forward_delay 0 && \
ip link set $TAP_A master $BR && ip link set $TAP_B master $BR && ip link set $BR up && \
ip addr add 198.18.20.254/24 dev $BR"
ip netns exec "$NS" "$GLUE_TEST" -l 0 --no-pci -- tap --iface-a "$TAP_A" --iface-b "$TAP_B" \
  --setup "$SETUP" --kernel-ip 198.18.20.254
