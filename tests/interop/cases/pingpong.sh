# Interop plugin: rdma-core's ibv_rc_pingpong against ndnic's rc_pingpong (the verbs engine, no
# connection manager: QP numbers, PSNs and GIDs travel over ibv_rc_pingpong's TCP side channel),
# 64 B and 4 KiB (one packet, and four at rxe's 1024-byte path MTU), both roles.
# Sourced by rxe_interop.sh; the contract is in its header.
ITERS=${ITERS:-300}

pingpong_cases() {
  echo "pp-s64 pingpong server 64"
  echo "pp-c64 pingpong client 64"
  echo "pp-s4096 pingpong server 4096"
  echo "pp-c4096 pingpong client 4096"
}

pingpong_direction() {
  if [ "$1" = server ]; then echo "rc_pingpong -> ibv_rc_pingpong"; else echo "ibv_rc_pingpong -> rc_pingpong"; fi
}

pingpong_guest() {
  local name=$1 role=$2 size=$3
  if [ "$role" = server ]; then
    echo "run $name NEVER ibv_rc_pingpong -d rxe0 -g 1 -n $ITERS -s $size"
  else
    echo "run $name \"Couldn't connect\" ibv_rc_pingpong -d rxe0 -g 1 -n $ITERS -s $size $kHostIp"
  fi
}

pingpong_host() {
  local name=$1 role=$2 size=$3
  HOST_CMD=("$BUILD/tools/rc_pingpong/rc_pingpong" -l 0 -- -g 1 -s "$size" -n "$ITERS")
  [ "$role" = server ] && HOST_CMD+=(--retry 90 "$kGuestIp")
  HOST_CMD+=(--ip "$kNdnicIp" --dev "$kNdnicDev" --capture "$LOGS/$name.pcap")
}

# "300 iters in 0.12 seconds = 400.00 usec/iter" -> "300 400.00"; empty when absent.
pingpong_iters() { awk '/ iters in .* usec\/iter/{print $1, $(NF-1); exit}' "$1" 2>/dev/null || true; }
pingpong_mbit() { awk '/ bytes in .* Mbit\/sec/{print $(NF-1); exit}' "$1" 2>/dev/null || true; }

pingpong_judge() {
  local name=$1 ok=1 h g
  [ "$(host_rc "$name")" = 0 ] && [ "$(guest_rc "$name")" = 0 ] || ok=0
  h=$(pingpong_iters "$LOGS/host-$name.log")
  g=$(pingpong_iters "$LOGS/guest-$name.log")
  { [ "${h%% *}" = "$ITERS" ] && [ "${g%% *}" = "$ITERS" ]; } || ok=0
  h=${h:+${h%% *} iters ${h#* } us/iter $(pingpong_mbit "$LOGS/host-$name.log") Mb/s}
  g=${g:+${g%% *} iters ${g#* } us/iter $(pingpong_mbit "$LOGS/guest-$name.log") Mb/s}
  printf '%s\t%s\t%s\n' "$(verdict $ok)" "$h" "$g"
}
