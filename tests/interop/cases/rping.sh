# Interop plugin: rdma-core's rping (librdmacm: IB CM on QP1, rdma_cm's service IDs and header)
# against nd_rping (ndnic's ND v1 API: Listen/Connect/Accept, windows, Send, Read, Write), 64 B and
# 4000 B, both roles, verification on (-V on the client; the server's -v lines checked too).
# Sourced by rxe_interop.sh; the contract is in its header.
PINGS=${PINGS:-100}
readonly kRpingBasePort=7174

rping_cases() {
  echo "rping-s64 rping server 64 0"
  echo "rping-c64 rping client 64 1"
  echo "rping-s4000 rping server 4000 2"
  echo "rping-c4000 rping client 4000 3"
}

rping_direction() {
  if [ "$1" = server ]; then echo "nd_rping -> rping"; else echo "rping -> nd_rping"; fi
}

# A port per case (the last word), so a connection never meets the previous one's TIMEWAIT.
rping_guest() {
  local name=$1 role=$2 size=$3 port=$((kRpingBasePort + $4))
  if [ "$role" = server ]; then
    echo "run $name NEVER rping -s -v -a $kGuestIp -p $port -S $size"
  else
    echo "run $name 'RDMA_CM_EVENT|connect error' rping -c -v -V -a $kNdnicIp -p $port -S $size -C $PINGS"
  fi
}

# nd_rping's worker lcore and its ND thread share CPU 0; the thread sleeps between polls.
rping_host() {
  local name=$1 role=$2 size=$3 port=$((kRpingBasePort + $4))
  HOST_CMD=("$BUILD/tools/nd_rping/nd_rping" --lcores 0@0,1@0 --)
  if [ "$role" = server ]; then
    HOST_CMD+=(-c -v -V -a "$kGuestIp" -p "$port" -S "$size" -C "$PINGS" --retry 90 --timeout 60)
  else
    HOST_CMD+=(-s -v -p "$port" --timeout 90)
  fi
  HOST_CMD+=(--ip "$kNdnicIp" --dev "$kNdnicDev" --capture "$LOGS/$name.pcap")
}

# rping's -v lines are long: the guest's block has their count and the start of the last, and
# every ping's data as nd_rping printed it must be exactly what rping's client put in its buffer
# for that ping: read from rxe (nd_rping server) or written back by it (nd_rping client).
rping_judge() {
  local name=$1 role=$2 size=$3 ok=1 prefix="ping data: " gp h
  [ "$role" = client ] && prefix="server ping data: "
  [ "$(host_rc "$name")" = 0 ] && [ "$(guest_rc "$name")" = 0 ] || ok=0
  [ -f "$LOGS/host-$name.log" ] &&
    python3 "$HERE/rping_check.py" "$LOGS/host-$name.log" "$prefix" "$PINGS" "$size" > "$LOGS/check-$name.log" 2>&1 ||
    ok=0
  gp=$(sed -n 's/^PINGS //p' "$LOGS/guest-$name.log")
  [ "${gp:-0}" = "$PINGS" ] || ok=0
  h="$(grep -c "^$prefix" "$LOGS/host-$name.log" 2>/dev/null || true) pings verified, $(cat "$LOGS/host-$name.ms" 2>/dev/null) ms"
  printf '%s\t%s\t%s\n' "$(verdict $ok)" "$h" "${gp:-0} pings"
}
