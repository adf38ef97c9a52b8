# Interop plugin: perftest 4.5-0.17 (Debian 12's perftest, in the guest on rxe) against
# `ndperf --perftest` (ndnic's verbs engine, perftest's TCP protocol: tools/ndperf/perftest/oob.h).
# Each of ib_{send,write,read}_{bw,lat}, the guest as server and as client, one single-packet size
# (64 B) and one of eight packets at rxe's 1024-byte path MTU (8 KiB), and -a (2 B .. 8 MiB, as
# perftest has it) for send_bw and write_lat both ways. perftest's -a cannot be capped, so its
# cases run few iterations; everything else runs PERFTEST_ITERS.
# Sourced by rxe_interop.sh; the contract is in its header.
PERFTEST_ITERS=${PERFTEST_ITERS:-200}
PERFTEST_ALL_ITERS=${PERFTEST_ALL_ITERS:-5}
readonly kPerftestPort=18515
readonly kPerftestAllSizes=23  # 2^1 .. 2^23

perftest_cases() {
  local t short role size
  for t in send_bw write_bw read_bw send_lat write_lat read_lat; do
    short=${t/_/}
    for size in 64 8192; do
      for role in server client; do
        echo "pt-$short-${role:0:1}$size perftest $role $t $size"
      done
    done
  done
  for t in send_bw write_lat; do
    for role in server client; do
      echo "pt-${t/_/}-${role:0:1}all perftest $role $t all"
    done
  done
}

perftest_direction() {
  local role=$1 t=$2
  if [ "$role" = server ]; then echo "ndperf client -> ib_$t server"; else echo "ib_$t client -> ndperf server"; fi
}

# -x 1: rxe0's GID 1 is the RoCE v2 IPv4-mapped one (eth0's address); -F: TCG's CPU has no
# fixed frequency, perftest would warn about it.
perftest_size_args() {
  if [ "$1" = all ]; then echo "-a -n $PERFTEST_ALL_ITERS"; else echo "-s $1 -n $PERFTEST_ITERS"; fi
}

perftest_guest() {
  local name=$1 role=$2 t=$3 size=$4
  local args="-d rxe0 -x 1 -F -p $kPerftestPort $(perftest_size_args "$size")"
  if [ "$role" = server ]; then
    echo "run $name NEVER ib_$t $args"
  else
    echo "run $name \"Couldn't connect\" ib_$t $args $kHostIp"
  fi
}

perftest_host() {
  local name=$1 role=$2 t=$3 size=$4
  HOST_CMD=("$BUILD/tools/ndperf/ndperf" -l 0 -- --perftest "$t" $(perftest_size_args "$size") -p $kPerftestPort)
  if [ "$role" = server ]; then
    HOST_CMD+=(--client "$kGuestIp" --retry 90)
  else
    HOST_CMD+=(--server)
  fi
  HOST_CMD+=(--ip "$kNdnicIp" --dev "$kNdnicDev")
  # -a moves 16 MiB a round: no capture of that
  [ "$size" = all ] || HOST_CMD+=(--capture "$LOGS/$name.pcap")
}

# The result rows of a perftest table: "#bytes #iterations figures..." lines. perftest in the
# TCG guest sometimes prints "inf" for one size of a latency test (its cycle counter under
# emulation; seen once at 64 KiB of write_lat -a): such a row counts on rxe's side (the size
# ran, rc 0), never on ndnic's, whose figures must be numbers.
perftest_rows() { awk '/^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+/' "$1" 2>/dev/null || true; }
perftest_guest_rows() { awk '/^ *[0-9]+ +[0-9]+ +([0-9.]+|inf|-?nan) +([0-9.]+|inf|-?nan)/' "$1" 2>/dev/null || true; }

# How many rows a side prints: every size, except perftest's write_bw/read_bw server (one row,
# the client's report) and read_lat server (none); ndperf does the same.
perftest_want_rows() {
  local side_role=$1 t=$2 size=$3 n=1
  [ "$size" = all ] && n=$kPerftestAllSizes
  if [ "$side_role" = server ]; then
    case $t in
      write_bw | read_bw) n=1 ;;
      read_lat) n=0 ;;
    esac
  fi
  echo $n
}

# A side's figures: bandwidth average (MB/sec) or typical latency (usec) of its last row;
# ROWS is perftest_rows or perftest_guest_rows.
perftest_figure() {
  local log=$1 t=$2 rows_of=$3 rows last
  rows=$("$rows_of" "$log" | grep -c . || true)
  last=$("$rows_of" "$log" | tail -n 1)
  [ -n "$last" ] || { echo "no rows"; return; }
  set -- $last
  if [ "${t#*_}" = bw ]; then
    echo "$rows rows, $1 B: $4 MB/s"
  else
    echo "$rows rows, $1 B: $5 us typ"
  fi
}

# PASS: both exit 0; each side printed one row per size it should, for the sizes asked
# (every power of two 2 .. 8 MiB under -a), with the iterations asked.
perftest_judge() {
  local name=$1 role=$2 t=$3 size=$4 ok=1 hl gl host_role iters want sizes
  hl="$LOGS/host-$name.log"
  gl="$LOGS/guest-$name.log"
  host_role=server
  [ "$role" = server ] && host_role=client
  iters=$PERFTEST_ITERS
  [ "$size" = all ] && iters=$PERFTEST_ALL_ITERS
  [ "$(host_rc "$name")" = 0 ] && [ "$(guest_rc "$name")" = 0 ] || ok=0
  local log side_role
  for log in "$hl" "$gl"; do
    side_role=$role
    [ "$log" = "$hl" ] && side_role=$host_role
    want=$(perftest_want_rows "$side_role" "$t" "$size")
    if [ "$want" = "$kPerftestAllSizes" ]; then
      sizes=$(awk -v n="$iters" 'BEGIN { for (e = 1; e <= 23; e++) printf "%d %d\n", 2 ^ e, n }')
    elif [ "$want" = 1 ]; then
      sizes="$([ "$size" = all ] && echo 8388608 || echo "$size") $iters"
    else
      sizes=""
    fi
    if [ "$log" = "$hl" ]; then
      [ "$(perftest_rows "$log" | awk '{print $1, $2}')" = "$sizes" ] || ok=0
    else
      [ "$(perftest_guest_rows "$log" | awk '{print $1, $2}')" = "$sizes" ] || ok=0
    fi
  done
  printf '%s\t%s\t%s\n' "$(verdict $ok)" "$(perftest_figure "$hl" "$t" perftest_rows)" \
    "$(perftest_figure "$gl" "$t" perftest_guest_rows)"
}
