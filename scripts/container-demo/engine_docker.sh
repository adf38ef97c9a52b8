# Sourced by scripts/container-demo.sh: the Docker engine (Debian 12's docker.io 20.10 and
# docker-compose 1.29). The services run through docker-compose itself, from
# docker/compose.yaml unchanged, so what Compose honours of the file is what is checked.
#
# A daemon already answering on /var/run/docker.sock is used as it is and left running. Without
# one (no systemd here), the script starts its own dockerd on a socket of its own, with its data
# under $kWork/docker (images stay cached there) and without the host changes dockerd makes by
# default (--iptables=false --ip-forward=false --ip-masq=false --bridge=none: the demo's network
# is internal and needs neither NAT nor forwarding nor docker0); it stops it afterwards, and
# host_state.sh puts back anything that still differs. The machine may have a newer static
# client first in PATH; Debian's own /usr/bin/docker is used.

kDocker=/usr/bin/docker
kDockerPackages=(docker.io docker-compose)
kDockerDir=$kWork/docker
kDockerPid=$kDockerDir/dockerd.pid
kDockerProject=ndnic-demo
docker_started=0

engine_packages() { echo "${kDockerPackages[@]}"; }
engine_images() { kBaseImage=ndnic-base:bookworm; kImage=ndnic:latest; }  # compose: image: ndnic

engine_start() {  # non-zero with a reason on stderr when Docker cannot run here
  [ -x "$kDocker" ] && command -v docker-compose >/dev/null || { echo "docker.io or docker-compose missing" >&2; return 1; }
  if DOCKER_HOST=unix:///var/run/docker.sock "$kDocker" info >/dev/null 2>&1; then
    export DOCKER_HOST=unix:///var/run/docker.sock
    echo "a Docker daemon runs already: using it (and leaving it running)"
  else
    mkdir -p "$kDockerDir/data" "$kDockerDir/exec"
    export DOCKER_HOST=unix://$kDockerDir/docker.sock
    dockerd --data-root "$kDockerDir/data" --exec-root "$kDockerDir/exec" --pidfile "$kDockerPid" \
      -H "$DOCKER_HOST" --storage-driver=overlay2 --iptables=false --ip-forward=false \
      --ip-masq=false --bridge=none >"$kLogs/dockerd.log" 2>&1 &
    docker_started=1
    local i
    for i in $(seq 60); do
      "$kDocker" info >/dev/null 2>&1 && break
      kill -0 $! 2>/dev/null || break
      sleep 0.5
    done
    if ! "$kDocker" info >/dev/null 2>&1; then
      tail -5 "$kLogs/dockerd.log" >&2
      echo "dockerd did not start (log: $kLogs/dockerd.log)" >&2
      return 1
    fi
    echo "started dockerd $(cat "$kDockerPid") on $DOCKER_HOST (data in $kDockerDir/data; log $kLogs/dockerd.log)"
  fi
  "$kDocker" version --format 'Docker engine {{.Server.Version}}, client {{.Client.Version}}'
  docker-compose version --short | sed 's/^/docker-compose /'
}

engine_stop() {
  [ "$docker_started" = 1 ] || return 0
  local pid
  pid=$(cat "$kDockerPid" 2>/dev/null) || return 0
  stop_process "$pid"
  docker_started=0
  echo "stopped dockerd $pid"
}

engine_has_image() { "$kDocker" image inspect "$1" >/dev/null 2>&1; }
engine_import() { "$kDocker" import --change 'CMD ["/bin/bash"]' - "$1" >/dev/null; }
engine_run_once() { "$kDocker" run --rm --network none "$@"; }
engine_build() {  # LOG: Compose builds the image itself, from the file (build: network host)
  NDNIC_BASE=$kBaseImage compose build >"$1" 2>&1
}
compose() { docker-compose --ansi never -p "$kDockerProject" -f "$kCompose" "$@"; }

engine_up() {  # the services exactly as docker/compose.yaml has them
  compose down --remove-orphans >/dev/null 2>&1
  compose up -d --no-build 2>&1 | sed 's/^/  /'
  server_id=$(service_id server) client_id=$(service_id client)
  [ -n "$server_id" ] && [ -n "$client_id" ]
}
service_id() {  # SERVICE: its container (Compose's labels; docker's own client answers fastest)
  "$kDocker" ps -aq --filter "label=com.docker.compose.project=$kDockerProject" \
    --filter "label=com.docker.compose.service=$1"
}
engine_network() { echo "${kDockerProject}_$kComposeNetwork"; }
engine_wait() {  # NAME: its exit status, or a failure after kTimeoutS
  local id=${1}_id
  if ! timeout "$kTimeoutS" "$kDocker" wait "${!id}"; then
    "$kDocker" kill "${!id}" >/dev/null 2>&1
    "$kDocker" wait "${!id}"
  fi
}
engine_logs() { local id=${1}_id; "$kDocker" logs "${!id}"; }
engine_inspect() {  # NAME: "IP MAC CAPS"; once the container has stopped, as it was set up
  local id=${1}_id
  "$kDocker" inspect -f '{{range .NetworkSettings.Networks}}{{if .IPAddress}}{{.IPAddress}}{{else}}{{.IPAMConfig.IPv4Address}}{{end}} {{if .MacAddress}}{{.MacAddress}}{{else}}{{$.Config.MacAddress}}{{end}}{{end}} {{join .HostConfig.CapAdd ","}}' "${!id}"
}
engine_network_internal() { "$kDocker" network inspect -f '{{.Internal}}' "$(engine_network)"; }
engine_down() { compose down --remove-orphans 2>&1 | sed 's/^/  /'; }
engine_keep_hint() { echo "docker-compose -p $kDockerProject -f docker/compose.yaml down (DOCKER_HOST=$DOCKER_HOST)"; }
engine_rmi_hint() { echo "DOCKER_HOST=$DOCKER_HOST $kDocker rmi $kImage $kBaseImage (or rm -rf $kDockerDir)"; }
