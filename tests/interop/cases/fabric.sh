# Interop plugin: libfabric's fi_pingpong over its verbs provider on rxe (Debian's libfabric in
# the guest) against fi_pingpong over the ndnic provider (build/fabric/libndnic-fi.so), both
# roles: FI_EP_MSG on the core providers, and FI_EP_RDM with ofi_rxm layered over each (what
# Open MPI's ofi MTL uses: rxm's own protocol across the two, its rendezvous by RDMA READ for
# messages past its eager size). fi_pingpong's default sizes (64 B to 1 MiB). fi_pingpong's TCP control channel
# joins the host kernel and the guest; the server sends its fabric address (198.18.0.2 or
# 198.18.0.3) on it, and the client connects to that through rdma_cm (verbs) or ndnic's CM.
# Sourced by rxe_interop.sh; the contract is in its header.
FI_ITERS=${FI_ITERS:-10}
readonly kFabricBaseCtrlPort=47592

fabric_cases() {
  if [ ! -f "$BUILD/fabric/libndnic-fi.so" ]; then
    echo "fabric: $BUILD/fabric/libndnic-fi.so not built; no fi_pingpong cases" >&2
    return 0
  fi
  if ! command -v fi_pingpong >/dev/null; then
    echo "fabric: no fi_pingpong on this machine (libfabric-bin); no fi_pingpong cases" >&2
    return 0
  fi
  echo "fi-msg-s fabric server 0 msg"
  echo "fi-msg-c fabric client 1 msg"
  echo "fi-rdm-s fabric server 2 rdm"
  echo "fi-rdm-c fabric client 3 rdm"
}

# The endpoint type a case runs (its name's middle word) and the provider each side names.
fabric_ep() { local e=${1#fi-}; echo "${e%%-*}"; }
fabric_prov() { if [ "$(fabric_ep "$1")" = rdm ]; then echo "$2;ofi_rxm"; else echo "$2"; fi; }

fabric_direction() {
  if [ "$1" = server ]; then echo "fi_pingpong ndnic -> verbs ($3)"; else echo "fi_pingpong verbs -> ndnic ($3)"; fi
}

# A control port per case (the last word), so a connection never meets the previous one's
# TIMEWAIT. The client retries while the other side's server is not listening yet.
fabric_guest() {
  local name=$1 role=$2 port=$((kFabricBaseCtrlPort + $3))
  # FI_VERBS_IFACE: the verbs provider takes its addresses from rxe0's netdev only.
  # FI_UNIVERSE_SIZE: ofi_rxm sizes its verbs CQ for that many peers (default 256: about
  # 98,000 entries), past rxe's 32,767; two processes need far fewer.
  local cmd="env FI_LOG_LEVEL=warn FI_UNIVERSE_SIZE=16 FI_VERBS_IFACE=eth0 fi_pingpong -p '$(fabric_prov "$name" verbs)' -e $(fabric_ep "$name") -I $FI_ITERS"
  if [ "$role" = server ]; then
    echo "run $name NEVER $cmd -B $port"
  else
    echo "run $name 'failed to connect' $cmd -P $port $kHostIp"
  fi
}

fabric_host() {
  local name=$1 role=$2 port=$((kFabricBaseCtrlPort + $3))
  local cmd=(env FI_PROVIDER_PATH="$BUILD/fabric" FI_NDNIC_DEV="$kNdnicDev" FI_NDNIC_IP="$kNdnicIp"
    fi_pingpong -p "$(fabric_prov "$name" ndnic)" -e "$(fabric_ep "$name")" -I "$FI_ITERS")
  if [ "$role" = server ]; then
    # fi_pingpong's client connects its control channel once: retry it while the guest's
    # server is not listening yet (the guest may still be booting).
    HOST_CMD=(bash -c 'out=$0; for _ in $(seq 360); do "$@" > "$out" 2>&1 && rc=0 || rc=$?
      [ $rc != 0 ] && grep -q "failed to connect" "$out" || break; sleep 0.25; done
      cat "$out"; exit $rc' "$LOGS/try-$name.log" "${cmd[@]}" -P "$port" "$kGuestIp")
  else
    HOST_CMD=("${cmd[@]}" -B "$port")
  fi
}

# fi_pingpong's result rows ("64 10 =10 1.2k 0.00s 0.29 217.60 0.00", usec/xfer 7th) as
# "6 sizes; 64: 217.60, 1m: 1443.30 us/xfer" (the first and the last); empty without rows.
fabric_figures() {
  awk '/^[0-9]+[kmg]? +[0-9]+ +=[0-9]+ / { n++; last = $1 ": " $7; if (n == 1) first = last }
       END { if (n) printf "%d sizes; %s, %s us/xfer\n", n, first, last }' "$1" 2>/dev/null || true
}

fabric_judge() {
  local name=$1 ok=1 h g
  [ "$(host_rc "$name")" = 0 ] && [ "$(guest_rc "$name")" = 0 ] || ok=0
  grep -q "usec/xfer" "$LOGS/host-$name.log" 2>/dev/null && grep -q "usec/xfer" "$LOGS/guest-$name.log" 2>/dev/null || ok=0
  h=$(fabric_figures "$LOGS/host-$name.log")
  g=$(fabric_figures "$LOGS/guest-$name.log")
  [ -n "$h" ] && [ -n "$g" ] || ok=0
  printf '%s\t%s\t%s\n' "$(verdict $ok)" "$h" "$g"
}
