# ndnic: two commands on a fresh Debian 12 machine (as root):
#   make demo   - install what is missing, build, run the demo
#   make test   - install what is missing, build, run every test (what CI runs)
# Other targets: make build, make bench, make interop, make container-demo, make mpi-demo,
# make clean.

BUILD ?= build
MESON_TEST_ARGS ?=

.PHONY: all deps hugepages setup build test demo bench interop container-demo mpi-demo clean

all: build

deps:
	@scripts/install-deps.sh

# Reserve 2 MiB hugepages when the machine allows it; programs pick --no-huge otherwise.
hugepages:
	@scripts/hugepages.sh

setup: deps
	@if [ ! -f $(BUILD)/build.ninja ]; then meson setup $(BUILD); fi

build: setup
	ninja -C $(BUILD)

test: build hugepages
	@scripts/run-tests.sh $(BUILD) $(MESON_TEST_ARGS)

# The mission narrated, then a short ndperf sweep through the ND API with its plot, then a
# summary (scripts/demo.sh); EAL's informational lines are shown only when a step failed.
demo: build hugepages
	@scripts/demo.sh $(BUILD)

bench: build hugepages
	@scripts/bench.sh $(BUILD)

# The interop matrix against Linux Soft-RoCE in a QEMU guest (as root; one guest boot): a
# table of case, direction, result and figures; non-zero when a case fails.
interop: build
	@NDNIC_INTEROP_LOGS=$(abspath $(BUILD))/interop-logs tests/interop/rxe_interop.sh $(BUILD)

# The two-node demo of docker/compose.yaml in real containers (as root): with the Docker engine
# (docker.io and docker-compose, installed and started if need be), or podman where Docker cannot
# run; ENGINE=docker|podman chooses. Builds the images (cached), runs and checks the demo, removes
# what it set up and puts back what the engine changed on the host.
container-demo:
	@scripts/container-demo.sh

# An MPI program (mpi/ndnic_mpi_check: ping-pong, Allreduce, a non-blocking exchange, all
# checked) as two ranks under mpirun, Open MPI's ofi MTL over the libfabric provider
# NDNIC_MPI_PROVIDER (default "ndnic;ofi_rxm"; "tcp;ofi_rxm" is libfabric's TCP, the baseline).
mpi-demo: build hugepages
	@scripts/mpi-demo.sh $(BUILD)

clean:
	rm -rf $(BUILD)
