# Shared by the integration wrappers: root check, unique names, running the two sides.
# shellcheck shell=bash

GLUE_TEST=${GLUE_TEST:?GLUE_TEST must point at the ndnic_glue_test binary}
RUN_ID=$$

require_root() {
  if [ "$(id -u)" != 0 ]; then
    echo "FAIL: $1 needs root (CI runs as root); not skipping"
    exit 1
  fi
}

# Disables IPv6 in a namespace before any link exists, so router solicitations and neighbour
# discovery do not mix with the test traffic.
new_netns() {
  ip netns add "$1"
  ip netns exec "$1" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
  ip -n "$1" link set lo up
}

# Starts side B in the background, then side A in the foreground; both logs are printed with
# their side as prefix. Exit status: 0 when both sides passed.
run_pair() {
  local log_b log_a rc_a=0 rc_b=0
  log_b=$(mktemp /tmp/ndnic-itest-b.XXXXXX)
  log_a=$(mktemp /tmp/ndnic-itest-a.XXXXXX)
  "${SIDE_B[@]}" >"$log_b" 2>&1 &
  local pid_b=$!
  [ -n "${WAIT_FOR:-}" ] && for _ in $(seq 100); do [ -e "$WAIT_FOR" ] && break; sleep 0.05; done
  "${SIDE_A[@]}" >"$log_a" 2>&1 || rc_a=$?
  wait "$pid_b" || rc_b=$?
  sed 's/^/[A] /' "$log_a"
  sed 's/^/[B] /' "$log_b"
  rm -f "$log_a" "$log_b"
  echo "side A exit $rc_a, side B exit $rc_b"
  [ "$rc_a" = 0 ] && [ "$rc_b" = 0 ]
}
