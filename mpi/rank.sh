#!/usr/bin/env bash
# One rank of scripts/mpi-demo.sh, as mpirun's program: runs PROGRAM ARGS, but first, on the
# virtio_user side of an ndnic pair (FI_NDNIC_DEV=net_virtio_user0,path=SOCK,...), waits for
# the vhost-user socket SOCK that the other rank's ndnic port creates: virtio_user cannot start
# before it exists. The provider is the one mpirun's --mca mtl_ofi_provider_include gave
# (Open MPI passes it on as OMPI_MCA_mtl_ofi_provider_include); other providers do not wait.
# Usage: mpi/rank.sh PROGRAM [ARGS...]
set -euo pipefail
kWaitTenths=300  # 30 s: the other rank's MPI_Init opens its port within that

if [[ "${OMPI_MCA_mtl_ofi_provider_include:-}" == *ndnic* &&
      "${FI_NDNIC_DEV:-}" =~ virtio_user[^,]*,(.*,)?path=([^,]+) ]]; then
  sock=${BASH_REMATCH[2]}
  for ((i = 0; i < kWaitTenths; i++)); do
    [ -S "$sock" ] && break
    sleep 0.1
  done
  if [ ! -S "$sock" ]; then
    echo "rank.sh: no vhost-user socket $sock after $((kWaitTenths / 10)) s (the vhost rank creates it)" >&2
    exit 1
  fi
fi
exec "$@"
