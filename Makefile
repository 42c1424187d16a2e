# The two Quick-start commands (and the benchmark). Each installs what is missing (Debian
# packages, as root), configures and builds, then runs. Safe to run again.
BUILD ?= build
PY := /usr/bin/python3
# Build and test dependencies (Debian 12 package names).
DEPS := g++ clang pkg-config meson ninja-build libeigen3-dev libboost-dev libcereal-dev catch2 \
        zlib1g-dev python3-thinc python3-numpy dataset-fashion-mnist
BENCH_DEPS := python3-torch libopenblas0-pthread  # PyTorch at its best: Debian points libblas at OpenBLAS

.PHONY: all deps bench-deps build test demo bench bench-compile clean

all: build

deps:
	@./tools/install-deps $(DEPS)

bench-deps:
	@./tools/install-deps $(DEPS) $(BENCH_DEPS)

$(BUILD)/build.ninja:
	meson setup $(BUILD) --buildtype=release

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

test: build
	@$(PY) tests/run_tests.py $(BUILD)

demo: build
	$(BUILD)/examples/mnist_mlp 2

bench: bench-deps $(BUILD)/build.ninja
	ninja -C $(BUILD) bench/tenon_bench
	$(PY) bench/run.py --tenon $(BUILD)/bench/tenon_bench --out $(BUILD)/bench.json $(BENCH_ARGS)

# Compile times (median of 3): the umbrella header, the Fashion-MNIST example, a 500-layer
# chain, and the diagnostics of a mismatch deep in it; needs only g++ (and clang++ if present).
bench-compile:
	$(PY) bench/compile/run.py --out $(BUILD)/compile_bench.json $(BENCH_COMPILE_ARGS)

clean:
	rm -rf $(BUILD)
