#!/usr/bin/env bash
# Install what ndnic needs from Debian 12 packages: only what is missing, no prompts.
# Used by the Makefile (make demo / make test / make bench), by CI and by docker/Dockerfile.
# Usage: scripts/install-deps.sh [extra-package ...]
set -euo pipefail

PKGS=(
  # build
  g++ meson ninja-build pkg-config make
  # DPDK 22.11 LTS and its PMDs (net_ring, net_pcap, net_af_packet, net_tap, vhost, virtio_user)
  dpdk dpdk-dev libdpdk-dev
  librte-mempool-ring23 librte-net-ring23 librte-net-pcap23 librte-net-af-packet23
  librte-net-tap23 librte-net-vhost23 librte-net-virtio23
  # tests and benchmarks
  libgtest-dev libbenchmark-dev zlib1g-dev
  # the libFuzzer target (clang's -fsanitize=fuzzer runtime lives in libclang-rt-14-dev)
  clang libclang-rt-14-dev
  # the independent decoder for the golden tests, and namespaces/veth for integration tests
  tshark iproute2 procps
  # the interop suite's own verbs peer, built here and run in the Soft-RoCE guest
  libibverbs-dev librdmacm-dev
  # the libfabric provider (fabric/) and its tests (fi_info, fi_pingpong); MPI over it (make
  # mpi-demo, the suite mpi): Open MPI with its ofi MTL
  libfabric-dev libfabric-bin openmpi-bin libopenmpi-dev
  # test drivers (fuzz runner, ndpcap CLI test, the test summary line)
  python3 gnuplot-nox
)
PKGS+=("$@")

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "install-deps: missing packages (${missing[*]}) and not root: run 'sudo $0'" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# tshark asks whether non-root users may capture; answer no without a prompt.
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
apt-get update -q -o DPkg::Lock::Timeout=600 >/dev/null
apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=600 "${missing[@]}" >/dev/null
echo "install-deps: done"
