# Sourced by scripts/container-demo.sh: rootful podman (Debian 12's podman 4.3 with runc).
# podman 4.3 has no compose of its own, so the services run with `podman run`, from exactly the
# commands, addresses, MACs and capabilities that compose_plan.py read out of docker/compose.yaml.

kPodmanPackages=(podman runc)

engine_packages() { echo "${kPodmanPackages[@]}"; }
engine_images() { kBaseImage=localhost/ndnic-base:bookworm; kImage=localhost/ndnic:latest; }

engine_start() {  # non-zero with a reason on stderr when podman cannot run here
  command -v podman >/dev/null || { echo "podman missing" >&2; return 1; }
  # The machine's own limits, measured: rootful podman sets nofile=1048576 and nproc=4194304,
  # which setrlimit refuses without CAP_SYS_RESOURCE; crun 1.8 refuses the hybrid cgroup layout.
  local nofile
  nofile=$(ulimit -Hn)
  [ "$nofile" = unlimited ] && nofile=1048576
  cat >"$kWork/containers.conf" <<EOC
[containers]
default_ulimits = ["nofile=${nofile}:${nofile}", "nproc=32768:32768"]
[engine]
runtime = "runc"
EOC
  export CONTAINERS_CONF=$kWork/containers.conf
  podman info >/dev/null 2>"$kLogs/podman-info.log" || { cat "$kLogs/podman-info.log" >&2; echo "podman does not run here" >&2; return 1; }
  podman --version
}
engine_stop() { :; }

engine_has_image() { podman image exists "$1"; }
engine_import() { podman import --change 'CMD ["/bin/bash"]' - "$1" >/dev/null; }
engine_run_once() { podman run --rm --network none "$@"; }
engine_build() {  # LOG
  podman build --network=host --build-arg BASE="$kBaseImage" -f "$kRepo/docker/Dockerfile" -t "$kImage" \
    "$kRepo" >"$1" 2>&1
}

kPodmanNetwork=ndnic-demo
engine_network() { echo "$kPodmanNetwork"; }
engine_up() {
  podman rm -f -t 0 ndnic-demo-server ndnic-demo-client >/dev/null 2>&1
  podman network rm -f "$kPodmanNetwork" >/dev/null 2>&1
  podman network create --internal --disable-dns --subnet "$kSubnet" --gateway "${kSubnet%.*}.1" \
    "$kPodmanNetwork" >/dev/null || return 1
  podman_run server "$kServerIp" "$kServerMac" "$kServerCaps" "${kServerCmd[@]}" &&
    podman_run client "$kClientIp" "$kClientMac" "$kClientCaps" "${kClientCmd[@]}"
}
podman_run() {  # NAME IP MAC CAPS COMMAND...
  local name=$1 ip=$2 mac=$3 caps=$4
  shift 4
  podman run -d --name "ndnic-demo-$name" --network "$kPodmanNetwork" --ip "$ip" --mac-address "$mac" \
    --cap-add "$caps" "$kImage" timeout "$kTimeoutS" "$@" >/dev/null && echo "  started ndnic-demo-$name"
}
engine_wait() {  # NAME
  if ! timeout "$kTimeoutS" podman wait "ndnic-demo-$1"; then
    podman stop -t 2 "ndnic-demo-$1" >/dev/null
    podman wait "ndnic-demo-$1"
  fi
}
engine_logs() { podman logs "ndnic-demo-$1"; }
engine_inspect() {  # NAME: "IP MAC CAPS"; CapAdd leaves out what podman grants by default (NET_RAW)
  podman inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}} {{.MacAddress}}{{end}} {{join .EffectiveCaps ","}}' "ndnic-demo-$1"
}
engine_network_internal() { podman network inspect -f '{{.Internal}}' "$kPodmanNetwork"; }
engine_down() {
  podman rm -f -t 0 ndnic-demo-server ndnic-demo-client >/dev/null 2>&1
  podman network rm -f "$kPodmanNetwork" >/dev/null 2>&1
  echo "  removed the containers and network $kPodmanNetwork"
}
engine_keep_hint() { echo "podman rm ndnic-demo-server ndnic-demo-client && podman network rm $kPodmanNetwork"; }
engine_rmi_hint() { echo "CONTAINERS_CONF=$kWork/containers.conf podman rmi $kImage $kBaseImage"; }
