# The two Quick-start commands (and the benchmark). Each installs what is missing (Debian
# packages, as root), configures and builds, then runs. Safe to run again.
BUILD ?= build
PY := /usr/bin/python3
# Build and test dependencies (Debian 12 package names).
DEPS := g++ clang pkg-config cmake meson ninja-build libeigen3-dev libboost-dev libcereal-dev catch2 \
        zlib1g-dev python3-thinc python3-numpy dataset-fashion-mnist libmsgpack-cxx-dev nlohmann-json3-dev \
        libthrust-dev libcub-dev
# PyTorch, LibTorch and dlib at their best: libopenblas0-pthread points libblas.so.3 at OpenBLAS.
# dlib's pkg-config file links libblas.so, liblapack.so and libjpeg.so, which libdlib-dev lacks.
BENCH_DEPS := python3-torch libopenblas0-pthread libtorch-dev libdlib-dev libblas-dev liblapack-dev libjpeg-dev
# The C++ anchors (bench/meson.build): never built by default, only here.
BENCH_ANCHORS := bench/libtorch_bench bench/dlib_bench
# make fuzz: clang++ 14 and libFuzzer (Debian's libclang-rt-14-dev).
FUZZ_DEPS := clang libclang-rt-14-dev
FUZZ_RUNS ?= 1000000
# Parallel compile jobs: the cores, but no more than one per GiB of available memory (a
# template-heavy test file takes up to about 1 GiB in g++). `make JOBS=1 ...` to override.
JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); \
  m=$$(awk '/MemAvailable/ {print int($$2 / 1048576)}' /proc/meminfo 2>/dev/null || echo $$n); \
  [ "$$m" -lt "$$n" ] && n=$$m; [ "$$n" -lt 1 ] && n=1; echo $$n)

.PHONY: all deps bench-deps build test test-gpu bench-gpu test-tsan test-sanitize fuzz demo demo-serve demo-langid bench bench-langid bench-compile clean

all: build

deps:
	@./tools/install-deps $(DEPS)

bench-deps:
	@./tools/install-deps $(DEPS) $(BENCH_DEPS)

$(BUILD)/build.ninja:
	meson setup $(BUILD) --buildtype=release

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD) -j $(JOBS)

# (The suite 'gpu', the CUDA backend's runs, is make test-gpu's.)
test: build
	@$(PY) tests/run_tests.py $(BUILD) --no-suite gpu

# On a machine with an NVIDIA GPU and CUDA (docs/cuda.md): a build with the CUDA backend
# ($(BUILD)-gpu, -Dcuda=enabled), test_cuda_ops, then the backend suite with TENON_TEST_OPS=cuda.
test-gpu: deps
	@[ -f $(BUILD)-gpu/build.ninja ] || meson setup $(BUILD)-gpu --buildtype=release -Dcuda=enabled \
	  -Dexamples=false -Dbench=false >/dev/null
	ninja -C $(BUILD)-gpu -j $(JOBS)
	@$(PY) tests/run_tests.py $(BUILD)-gpu --suite cuda --suite gpu

# On a machine with an NVIDIA GPU (docs/cuda.md, "The GPU benchmark"): tenon's device backend
# (bench/gpu_bench.cpp, in $(BUILD)-gpu) beside PyTorch eager and torch.compile on the same GPU
# (bench/gpu_torch.py): $(BUILD)-gpu/bench-gpu.json. Without a GPU it says so and writes nothing.
bench-gpu: deps
	@[ -f $(BUILD)-gpu/build.ninja ] || meson setup $(BUILD)-gpu --buildtype=release -Dcuda=enabled \
	  -Dexamples=false >/dev/null
	ninja -C $(BUILD)-gpu -j $(JOBS) bench/gpu_bench
	$(PY) bench/gpu_run.py --tenon $(BUILD)-gpu/bench/gpu_bench --out $(BUILD)-gpu/bench-gpu.json $(BENCH_GPU_ARGS)

# The thread tests (the matrix product on 3 threads, the plan's row passes split over
# threads, models' plans made and used from many threads, errors raised on several threads,
# a tok2vec and a text classifier predicting from several threads) under ThreadSanitizer, in
# their own build dir ($(BUILD)-tsan).
test-tsan: deps
	@[ -f $(BUILD)-tsan/build.ninja ] || meson setup $(BUILD)-tsan --buildtype=debugoptimized \
	  -Db_sanitize=thread -Dexamples=false -Dbench=false -Dcuda=disabled >/dev/null
	ninja -C $(BUILD)-tsan tests/test_threads tests/test_gemm tests/test_lower tests/test_engine tests/test_errors \
	  tests/integration/test_tok2vec tests/test_frozen
	TSAN_OPTIONS=halt_on_error=1 $(BUILD)-tsan/tests/test_threads
	TSAN_OPTIONS=halt_on_error=1 $(BUILD)-tsan/tests/test_lower "[threads]"
	TSAN_OPTIONS=halt_on_error=1 $(BUILD)-tsan/tests/test_engine "[threads]"
	TSAN_OPTIONS=halt_on_error=1 $(BUILD)-tsan/tests/test_errors "[threads]"
	TSAN_OPTIONS=halt_on_error=1 $(BUILD)-tsan/tests/test_frozen "[threads]"
	TSAN_OPTIONS=halt_on_error=1 TENON_NUM_THREADS=3 $(BUILD)-tsan/tests/test_gemm
	TSAN_OPTIONS=halt_on_error=1 TENON_NUM_THREADS=3 $(BUILD)-tsan/tests/integration/test_tok2vec "[threads]"

# The whole suite under AddressSanitizer and UndefinedBehaviorSanitizer, in its own build dir
# ($(BUILD)-asan), ending as make test does. Array memory bypasses tenon's block cache there, so
# ASan sees a use of a freed array (docs/reliability.md, "Memory").
test-sanitize: deps
	@[ -f $(BUILD)-asan/build.ninja ] || meson setup $(BUILD)-asan --buildtype=debugoptimized \
	  -Db_sanitize=address,undefined -Dexamples=false -Dbench=false -Dcuda=disabled >/dev/null
	ninja -C $(BUILD)-asan
	@$(PY) tests/run_tests.py $(BUILD)-asan --no-suite gpu

# Model files under libFuzzer (tests/fuzz/README.md), in $(BUILD)-fuzz with the library compiled
# with ASan + UBSan too: FUZZ_RUNS executions from seeds the models write; crashes go to
# tests/fuzz/corpus/ (committed; make test replays them).
FUZZ_DIR := $(BUILD)-fuzz
fuzz:
	@./tools/install-deps $(DEPS) $(FUZZ_DEPS)
	@[ -f $(FUZZ_DIR)/build.ninja ] || CXX=clang++ meson setup $(FUZZ_DIR) --buildtype=debugoptimized \
	  -Db_sanitize=address,undefined -Db_lundef=false \
	  -Dcpp_args=-fsanitize=fuzzer-no-link -Dfuzz=true -Dtests=false -Dexamples=false -Dbench=false -Dcuda=disabled >/dev/null
	ninja -C $(FUZZ_DIR) tests/fuzz/fuzz_model tests/fuzz/fuzz_replay
	@rm -rf $(FUZZ_DIR)/fuzz-seeds && mkdir -p $(FUZZ_DIR)/fuzz-work tests/fuzz/corpus
	$(FUZZ_DIR)/tests/fuzz/fuzz_replay --write-seeds $(FUZZ_DIR)/fuzz-seeds
	@echo "fuzzing: $(FUZZ_RUNS) runs (log: $(FUZZ_DIR)/fuzz.log)"; rc=0; start=$$(date +%s); \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=allocator_may_return_null=0 \
	  $(FUZZ_DIR)/tests/fuzz/fuzz_model -runs=$(FUZZ_RUNS) -print_final_stats=1 -timeout=20 \
	  -rss_limit_mb=2048 -malloc_limit_mb=512 -artifact_prefix=tests/fuzz/corpus/ \
	  $(FUZZ_DIR)/fuzz-work $(FUZZ_DIR)/fuzz-seeds tests/fuzz/corpus >$(FUZZ_DIR)/fuzz.log 2>&1 || rc=$$?; \
	grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)' $(FUZZ_DIR)/fuzz.log; \
	[ $$rc -eq 0 ] || tail -n 60 $(FUZZ_DIR)/fuzz.log; \
	echo "fuzz: $$(sed -n 's/^stat::number_of_executed_units: *//p' $(FUZZ_DIR)/fuzz.log) executions in" \
	  "$$(( $$(date +%s) - start )) s, $$([ $$rc -eq 0 ] && echo 0 || echo 1) crashes" \
	  "(corpus: $$(ls tests/fuzz/corpus | wc -l) files in tests/fuzz/corpus/)"; exit $$rc

# The soak test (bench/soak.cpp, docs/reliability.md): 8 threads serve an MLP and a text
# classifier at random batch sizes while a 9th trains copies and swaps them in; RSS,
# allocations per call and p99 latency each minute, and whether memory stayed flat.
SOAK_SECONDS ?= 600
.PHONY: soak
soak: deps $(BUILD)/build.ninja
	ninja -C $(BUILD) bench/soak
	SOAK_SECONDS=$(SOAK_SECONDS) $(BUILD)/bench/soak

# Only what the demo needs (the library, the example and the tenon command), not the tests.
# Then the same model from a config (docs/configs.md, "The tenon command"): one epoch.
demo: deps $(BUILD)/build.ninja
	ninja -C $(BUILD) -j $(JOBS) examples/mnist_mlp tools/tenon/tenon
	$(BUILD)/examples/mnist_mlp 2
	$(BUILD)/tools/tenon/tenon describe examples/configs/fashion_mnist.cfg
	$(BUILD)/tools/tenon/tenon train examples/configs/fashion_mnist.cfg --output $(BUILD)/fashion-model \
	  --training.max_epochs 1
	$(BUILD)/tools/tenon/tenon evaluate $(BUILD)/fashion-model

# Model files (docs/serialization.md): train a word-language identifier on Debian's word
# lists and save it, then a minimal service loads the file and answers lines from stdin.
DEMO_SERVE_DEPS := wamerican wngerman wfrench wspanish
demo-serve: build
	@./tools/install-deps $(DEMO_SERVE_DEPS)
	$(BUILD)/examples/langid_train $(BUILD)/langid.tenon 3
	printf '%s\n' "the quick brown fox jumps over the lazy dog" "der schnelle braune Fuchs springt über den Hund" \
	  "el rápido zorro marrón salta sobre el perro" | $(BUILD)/examples/langid_serve $(BUILD)/langid.tenon

# Which language is a word (examples/langid.cpp, docs/examples.md): train on Debian's word
# lists (a fixed split of eleven languages), then the one-line predictor loads the file.
DEMO_LANGID_DEPS := wamerican wngerman wfrench wspanish witalian wportuguese wdutch wswedish wnorwegian wdanish wpolish
LANGID_EPOCHS ?= 5
demo-langid: deps $(BUILD)/build.ninja
	@./tools/install-deps $(DEMO_LANGID_DEPS)
	ninja -C $(BUILD) -j $(JOBS) examples/langid
	$(BUILD)/examples/langid train --epochs $(LANGID_EPOCHS) --model $(BUILD)/langid-words.tenon
	$(BUILD)/examples/langid --model $(BUILD)/langid-words.tenon house Haus maison casa huis hus dom

# The same identifier in Thinc on the same split and ids (bench/langid_thinc.py): accuracy and
# training time side by side (build/langid_bench.json).
bench-langid: deps $(BUILD)/build.ninja
	@./tools/install-deps $(DEMO_LANGID_DEPS)
	ninja -C $(BUILD) -j $(JOBS) examples/langid
	$(PY) bench/langid_compare.py $(BUILD)/examples/langid $(BUILD) --epochs $(LANGID_EPOCHS) \
	  --out $(BUILD)/langid_bench.json

# A build dir configured before LibTorch / dlib were installed lacks their targets: look again;
# an anchor whose library is still missing is left out (run.py then skips it).
bench: bench-deps $(BUILD)/build.ninja
	@(for t in $(BENCH_ANCHORS); do ninja -C $(BUILD) -t query $$t >/dev/null 2>&1 || exit 1; done) \
	  || meson setup --reconfigure $(BUILD) >/dev/null
	ninja -C $(BUILD) bench/tenon_bench bench/tok2vec_bench $$(for t in $(BENCH_ANCHORS); do \
	  ninja -C $(BUILD) -t query $$t >/dev/null 2>&1 && echo $$t; done)
	$(PY) bench/run.py --tenon $(BUILD)/bench/tenon_bench --libtorch $(BUILD)/bench/libtorch_bench \
	  --dlib $(BUILD)/bench/dlib_bench --tok2vec $(BUILD)/bench/tok2vec_bench --out $(BUILD)/bench.json $(BENCH_ARGS)

# Compile times (median of 3): the umbrella header, the Fashion-MNIST example, a 500-layer
# chain, and the diagnostics of a mismatch deep in it; needs only g++ (and clang++ if present).
bench-compile:
	$(PY) bench/compile/run.py --out $(BUILD)/compile_bench.json $(BENCH_COMPILE_ARGS)

clean:
	rm -rf $(BUILD) $(BUILD)-tsan $(BUILD)-asan $(BUILD)-fuzz
