#!/usr/bin/env bash
# make mpi-demo: ndnic_mpi_check (mpi/) as two ranks under mpirun, through Open MPI's cm PML and
# ofi MTL over one libfabric provider, each rank with its own ndnic port: rank 0 a vhost-user
# port (net_vhost0, 198.18.60.1), rank 1 the virtio_user port that connects to it (198.18.60.2).
# Nothing else may carry MPI data (PML cm, MTL ofi, that provider only, BTL self), and the ranks'
# own selection lines must show that both ran PML cm and MTL ofi over that provider.
#
# The same command line runs over libfabric's TCP provider (the baseline) by changing the
# provider string only; its ranks ignore the FI_NDNIC_* variables.
#
# Prints the mpirun command line, the program's table and a verdict; the whole output (Open
# MPI's selection lines, EAL's) is kept in LOG_DIR/mpirun.log and printed whole on failure.
# Exit 0 when every check passed, 1 otherwise, 77 (meson's "skipped") when the provider is ndnic
# and BUILD/fabric/libndnic-fi.so is not built.
# Usage: scripts/mpi-demo.sh BUILD [LOG_DIR]          (LOG_DIR default: BUILD/mpi-demo-logs)
# Environment: NDNIC_MPI_PROVIDER  libfabric provider (default "ndnic;ofi_rxm"; "tcp;ofi_rxm":
#                                  libfabric's TCP provider, the baseline)
#              NDNIC_MPI_ARGS      ndnic_mpi_check's arguments (default "-n 100")
set -uo pipefail

build=${1:?usage: mpi-demo.sh BUILD [LOG_DIR]}
build=$(cd "$build" && pwd)
logs=${2:-$build/mpi-demo-logs}
src=$(cd "$(dirname "$0")/.." && pwd)
provider=${NDNIC_MPI_PROVIDER:-ndnic;ofi_rxm}
read -r -a prog_args <<<"${NDNIC_MPI_ARGS:--n 100}"
prog=$build/mpi/ndnic_mpi_check
kTimeout=300  # seconds for the whole run: a hung rank must not hang the caller
kRanks=2

if [ ! -x "$prog" ]; then
  echo "mpi-demo: FAIL ($prog is not built)"
  exit 1
fi
if [[ "$provider" == *ndnic* && ! -f "$build/fabric/libndnic-fi.so" ]]; then
  echo "mpi-demo SKIPPED: provider $provider, but $build/fabric/libndnic-fi.so is not built" \
    "(NDNIC_MPI_PROVIDER='tcp;ofi_rxm' runs the same over libfabric's TCP provider)"
  exit 77
fi
mkdir -p "$logs"
log=$logs/mpirun.log
work=$(mktemp -d /tmp/ndnic-mpi.XXXXXX)
trap 'rm -rf "$work"' EXIT
sock=$work/vhost.sock  # rank 0's port creates it; rank 1's (mpi/rank.sh) waits for it

# --bind-to none: each rank's EAL pins it to its own lcore (FI_NDNIC_EAL_ARGS -l).
# The *_verbose settings print the selection lines checked below.
cmd=(mpirun)
[ "$(id -u)" = 0 ] && cmd+=(--allow-run-as-root)
cmd+=(--oversubscribe --bind-to none
  --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "$provider" --mca btl self
  --mca pml_base_verbose 10 --mca mtl_base_verbose 10 --mca mtl_ofi_verbose 1
  -np 1 -x "FI_PROVIDER_PATH=$build/fabric" -x "FI_NDNIC_DEV=net_vhost0,iface=$sock,queues=1"
  -x FI_NDNIC_IP=198.18.60.1 -x "FI_NDNIC_EAL_ARGS=-l 0 --no-pci"
  "$src/mpi/rank.sh" "$prog" "${prog_args[@]}"
  : -np 1 -x "FI_PROVIDER_PATH=$build/fabric" -x "FI_NDNIC_DEV=net_virtio_user0,path=$sock,queues=1"
  -x FI_NDNIC_IP=198.18.60.2 -x "FI_NDNIC_EAL_ARGS=-l 1 --no-pci"
  "$src/mpi/rank.sh" "$prog" "${prog_args[@]}")

echo "== ndnic_mpi_check over Open MPI's ofi MTL, libfabric provider $provider"
echo "\$ ${cmd[*]@Q}"
# Live: the program's own lines, without Open MPI's selection lines ("[host:pid] ...") and EAL's.
timeout "$kTimeout" "${cmd[@]}" 2>&1 | tee "$log" | grep --line-buffered -vE '^\[[^] ]+:[0-9]+\] |^EAL: '
rc=${PIPESTATUS[0]}

# count PATTERN: how many lines of the log match the fixed string PATTERN.
count() { grep -cF -- "$1" "$log"; }
why=()
[ "$rc" = 0 ] || why+=("mpirun exited $rc")
[ "$(count '] select: component cm selected')" = "$kRanks" ] ||
  why+=("not every rank selected PML cm")
[ "$(count '] select: component ofi selected')" = "$kRanks" ] ||
  why+=("not every rank selected MTL ofi")
[ "$(count "mtl:ofi:prov: $provider")" = "$kRanks" ] && [ "$(count "mtl:ofi:prov: ")" = "$kRanks" ] ||
  why+=("not every rank's MTL ofi ran over $provider (its lines: $(grep -oE 'mtl:ofi:prov: .*' "$log" | sort | uniq -c | tr -s ' \n' ' '))")
grep -q '^ndnic_mpi_check: PASS' "$log" || why+=("ndnic_mpi_check did not say PASS")

if [ ${#why[@]} -ne 0 ]; then
  echo "== the whole output ($log):"
  sed 's/^/   | /' "$log"
  reasons=$(printf '%s; ' "${why[@]}")
  echo "mpi-demo: FAIL (${reasons%; })"
  exit 1
fi
echo "mpi-demo: PASS ($kRanks ranks, each on PML cm + MTL ofi over $provider)"
