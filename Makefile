# ndnic: two commands on a fresh Debian 12 machine (as root):
#   make demo   - install what is missing, build, run the demo
#   make test   - install what is missing, build, run every test (what CI runs)
# Other targets: make build, make bench, make clean.

BUILD ?= build
MESON_TEST_ARGS ?=

.PHONY: all deps hugepages setup build test demo bench clean

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

demo: build hugepages
	$(BUILD)/tools/nd_demo/nd_demo

bench: build hugepages
	@for b in $(BUILD)/perf/bench_*; do [ -f "$$b" ] && [ -x "$$b" ] || continue; "$$b" || exit 1; done

clean:
	rm -rf $(BUILD)
