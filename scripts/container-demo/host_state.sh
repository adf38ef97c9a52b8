# Sourced by scripts/container-demo.sh: what a container engine may change on the host, taken
# before the demo and compared (and restored where it differs) after it. dockerd, for one, turns
# on net.ipv4.ip_forward, sets iptables' FORWARD policy to DROP (which, with br_netfilter,
# breaks every other bridge on the host), adds docker0 and mounts, and undoes none of it when it
# stops; netavark turns forwarding on even for an internal network.
#
# host_state_save DIR     writes DIR/{sysctl,nft,links,mounts,paths}
# host_state_restore DIR  puts back what differs (sysctls, the nft ruleset, new links, new mounts,
#                         new docker runtime paths); prints what it restored
# host_state_diff DIR     prints what still differs; non-zero when anything does
# host_state_release_own WORK  before the first save: what an earlier demo that was killed
#                         (a CI timeout, kill -9) left of its own under WORK
# stop_process PID        TERM, up to 20 s for it to end, then KILL

export LC_ALL=C  # sort and comm must agree on the order
kHostSysctls=(net.ipv4.ip_forward net.ipv4.conf.all.forwarding net.ipv6.conf.all.forwarding
  net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables net.bridge.bridge-nf-call-arptables)
kHostPaths=(/run/docker /run/docker.sock /var/run/docker.sock /etc/docker/key.json /run/containerd
  /run/netns /var/run/netns /run/containers /run/libpod)

host_state_dump() {  # DIR
  local d=$1 k
  mkdir -p "$d"
  for k in "${kHostSysctls[@]}"; do
    if [ -e "/proc/sys/${k//.//}" ]; then echo "$k=$(cat "/proc/sys/${k//.//}")"; fi
  done >"$d/sysctl"
  # Counters move by themselves; the rules are what matters.
  nft list ruleset 2>/dev/null | sed -E 's/counter packets [0-9]+ bytes [0-9]+/counter/' >"$d/nft" || true
  ip -o link show | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }' | sort >"$d/links"
  awk '{ print $5 }' /proc/self/mountinfo | sort >"$d/mounts"
  for k in "${kHostPaths[@]}"; do if [ -e "$k" ]; then echo "$k"; fi; done | sort >"$d/paths"
  true
}

# A killed demo can leave its dockerd and the overlay mounts of its containers under WORK. The
# next dockerd removes such mounts when it starts, so they would read as a change this run made
# to the host; they are the demo's own, so they go before the host is recorded.
stop_process() {  # PID (under set -e too: a process already gone is no failure)
  kill "$1" 2>/dev/null || true
  for _ in $(seq 40); do kill -0 "$1" 2>/dev/null || break; sleep 0.5; done
  kill -9 "$1" 2>/dev/null || true
}

host_state_release_own() {  # WORK
  local work=$1 pid m
  pid=$(cat "$work/docker/dockerd.pid" 2>/dev/null) || pid=""
  if [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = dockerd ]; then
    stop_process "$pid"
    echo "  stopped dockerd $pid, left running by an earlier demo"
  fi
  awk -v w="$work/" 'index($5, w) == 1 { print $5 }' /proc/self/mountinfo | sort -r | while read -r m; do
    umount -l "$m" 2>/dev/null && echo "  unmounted $m, left by an earlier demo"
  done
  true
}

host_state_save() { rm -rf "$1"; host_state_dump "$1"; }

host_state_diff() {  # DIR
  local now=$1.now f rc=0
  rm -rf "$now"
  host_state_dump "$now"
  for f in sysctl nft links mounts paths; do
    if ! diff -q "$1/$f" "$now/$f" >/dev/null; then
      echo "  host $f differs from before the demo:"
      diff "$1/$f" "$now/$f" | grep -E '^[<>]' | head -20 | sed 's/^/    /'
      rc=1
    fi
  done
  return $rc
}

host_state_restore() {  # DIR
  local d=$1 now=$1.now line k v m
  host_state_diff "$d" >/dev/null && return 0
  while IFS= read -r line; do
    k=${line%%=*} v=${line#*=}
    if [ "$(cat "/proc/sys/${k//.//}" 2>/dev/null)" != "$v" ]; then
      echo "$v" >"/proc/sys/${k//.//}" && echo "  restored $k=$v"
    fi
  done <"$d/sysctl"
  if ! diff -q "$d/nft" "$now/nft" >/dev/null; then
    { echo "flush ruleset"; cat "$d/nft"; } | nft -f - && echo "  restored the nft ruleset (iptables' rules included)"
  fi
  comm -13 "$d/links" "$now/links" | while read -r k; do
    ip link delete "$k" 2>/dev/null && echo "  deleted link $k"
  done
  comm -13 "$d/mounts" "$now/mounts" | sort -r | while read -r m; do
    umount -l "$m" 2>/dev/null && echo "  unmounted $m"
  done
  comm -13 "$d/paths" "$now/paths" | while read -r k; do
    rm -rf "$k" && echo "  removed $k"
  done
}
