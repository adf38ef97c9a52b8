# Interop plugin: tests/interop/verbs_peer (libibverbs + librdmacm on rxe) against
# tests/interop/nd_peer (ndnic's ND v1 API and its extension) through the scenarios libibverbs
# programs and perftest do not cover: type-2 windows with SEND_WITH_INV, immediate data, atomics,
# solicited events, RNR, remote access errors. The protocol is in nd_peer/protocol.h. One case per
# scenario and active side ("-rxe": verbs_peer acts, "-nd": nd_peer acts), one connection each.
# Sourced by rxe_interop.sh; the contract is in its header.
readonly kVerbsBasePort=7400

# NAME GUEST_ROLE SCENARIO PORT_INDEX. The guest connects when rxe is active and listens when
# ndnic is, so both of ndnic's CM roles see every feature. In the RNR cases the receiver asks
# its peer for a number of RNR retries (0 in rnrx) in its REQ or REP, as rdma_cm's
# rnr_retry_count does; the guest connects in both, and rnrx-nd-rep has ndnic connect so that
# its active side takes the count from rxe's REP.
verbs_cases() {
  if [ ! -x "$BUILD/tests/interop/verbs_peer/verbs_peer" ]; then
    echo "verbs: $BUILD/tests/interop/verbs_peer/verbs_peer is not built (needs Debian's libibverbs-dev and librdmacm-dev at meson setup): no verbs cases" >&2
    return 0
  fi
  if [ ! -x "$BUILD/tests/interop/nd_peer/nd_peer" ]; then
    echo "verbs: $BUILD/tests/interop/nd_peer/nd_peer is not built: no verbs cases" >&2
    return 0
  fi
  local i=0 s
  for s in mw imm atomic solicited rnr rnrx access; do
    echo "verbs-$s-rxe verbs client $s-rxe $i"
    i=$((i + 1))
    if [ "$s" = rnr ] || [ "$s" = rnrx ]; then
      echo "verbs-$s-nd verbs client $s-nd $i"
    else
      echo "verbs-$s-nd verbs server $s-nd $i"
    fi
    i=$((i + 1))
  done
  # ndnic connects and rxe's rdma_accept asks for rnr_retry_count 0 in its REP: the active side
  # takes the REP's RNR Retry Count (the REP's field, as Linux's cm_rep_handler).
  echo "verbs-rnrx-nd-rep verbs server rnrx-nd $i"
}

verbs_guest_files() {
  echo "$BUILD/tests/interop/verbs_peer/verbs_peer /usr/bin/verbs_peer"
}

verbs_direction() {
  local role=$1 scenario=$2 acts="verbs_peer -> nd_peer"
  [ "${scenario##*-}" = nd ] && acts="nd_peer -> verbs_peer"
  echo "${scenario%-*}: $acts (guest $role)"
}

verbs_guest() {
  local name=$1 role=$2 scenario=$3 port=$((kVerbsBasePort + $4))
  if [ "$role" = server ]; then
    echo "run $name NEVER verbs_peer --server -p $port --scenario $scenario"
  else
    echo "run $name 'connect error' verbs_peer --client $kNdnicIp -p $port --scenario $scenario"
  fi
}

# nd_peer's worker lcore and its ND thread share CPU 0; the thread sleeps between polls.
verbs_host() {
  local name=$1 role=$2 scenario=$3 port=$((kVerbsBasePort + $4))
  HOST_CMD=("$BUILD/tests/interop/nd_peer/nd_peer" --lcores 0@0,1@0 -- -p "$port" --scenario "$scenario")
  if [ "$role" = server ]; then
    HOST_CMD+=(--client "$kGuestIp" --retry 90)
  else
    HOST_CMD+=(--server)
  fi
  HOST_CMD+=(--ip "$kNdnicIp" --dev "$kNdnicDev" --capture "$LOGS/$name.pcap")
}

verbs_count() { grep -c "^$1 " "$2" 2>/dev/null || true; }

# PASS: both sides exited 0, each printed at least one ok line and no FAIL line.
verbs_judge() {
  local name=$1 ok=1 hok hfail gok gfail
  hok=$(verbs_count ok "$LOGS/host-$name.log")
  hfail=$(verbs_count FAIL "$LOGS/host-$name.log")
  gok=$(verbs_count ok "$LOGS/guest-$name.log")
  gfail=$(verbs_count FAIL "$LOGS/guest-$name.log")
  [ "$(host_rc "$name")" = 0 ] && [ "$(guest_rc "$name")" = 0 ] || ok=0
  [ "${hok:-0}" -gt 0 ] && [ "${gok:-0}" -gt 0 ] && [ "${hfail:-0}" = 0 ] && [ "${gfail:-0}" = 0 ] || ok=0
  printf '%s\t%s\t%s\n' "$(verdict $ok)" "${hok:-0} ok ${hfail:-0} FAIL, $(cat "$LOGS/host-$name.ms" 2>/dev/null) ms" \
    "${gok:-0} ok ${gfail:-0} FAIL"
}
