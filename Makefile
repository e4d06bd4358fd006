# ava: the one entry point. `make` builds, `make test` runs every test (also
# an ASan/UBSan build), `make demo` runs the demo program natively and under ava.
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
BUILD_TYPE ?= RelWithDebInfo
CTEST_ARGS ?= --output-on-failure --timeout 300 -j2

.PHONY: all deps build build-asan build-fuzz test test-asan fuzz demo vm-demo bench goldens format format-check lint hooks clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD)

$(ASAN_BUILD)/build.ninja: | deps
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DAVA_SANITIZE=ON

build-asan: deps $(ASAN_BUILD)/build.ninja
	cmake --build $(ASAN_BUILD)

# The libFuzzer harnesses (tests/fuzz) and only what they need, with clang:
# everything instrumented for coverage and ASan/UBSan.
$(FUZZ_BUILD)/build.ninja: | deps
	CC=clang-14 CXX=clang++-14 cmake -S . -B $(FUZZ_BUILD) -G Ninja \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAVA_FUZZ=ON

build-fuzz: deps $(FUZZ_BUILD)/build.ninja
	cmake --build $(FUZZ_BUILD) --target ava_fuzzers

# ctest prints the time per label at the end; skipped tests are listed with
# their reasons afterwards (ctest alone shows only "Skipped"). The fuzz build
# runs only its fuzz label: each harness a fixed number of inputs, fixed seed.
test: build build-asan build-fuzz format-check
	cd $(BUILD) && { ctest $(CTEST_ARGS); rc=$$?; $(CURDIR)/scripts/test-skips.sh .; exit $$rc; }
	cd $(ASAN_BUILD) && { ctest $(CTEST_ARGS); rc=$$?; $(CURDIR)/scripts/test-skips.sh .; exit $$rc; }
	cd $(FUZZ_BUILD) && { ctest $(CTEST_ARGS) -L fuzz; rc=$$?; $(CURDIR)/scripts/test-skips.sh .; exit $$rc; }

# Runs every harness longer (AVA_FUZZ_TIME seconds each, default 60) and
# prints executions/s and coverage per harness; FUZZERS="worker_demo cava"
# picks some. New inputs go to out/fuzz, never into the checked-in corpus.
# Without FUZZERS, the in-guest exerciser of ava.ko (test_vm_exerciser, in
# the normal build) then hunts for AVA_FUZZ_TIME seconds too, plus its
# unload and unbind phases.
fuzz: build-fuzz
	@rc=0; scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZERS) || rc=1; \
	if [ -z "$(FUZZERS)" ]; then \
	  $(MAKE) build && cd $(BUILD) && AVA_EXERCISER_SECONDS=$${AVA_FUZZ_TIME:-60} \
	    ctest --output-on-failure -R '^test_vm_exerciser$$' || rc=1; \
	fi; exit $$rc

demo: build
	scripts/demo.sh $(BUILD)

# Boots a QEMU guest with ava.ko and runs clinfo and an OpenCL program in it
# over /dev/ava against PoCL on the host, next to their native runs.
vm-demo: build
	vm/demo.sh $(BUILD)

# Channel benchmarks: table (CSV, JSON) and plot in out/bench; ratios against
# baselines measured in the same run. AVA_BENCH_QUICK=1 for a short run.
bench: build
	scripts/bench.sh $(BUILD) out/bench

# Regenerates the cava golden files after an intended change of the output.
goldens: build
	scripts/update-goldens.sh $(BUILD)

format:
	git ls-files '*.cpp' '*.hpp' | xargs clang-format-14 -i

format-check:
	git ls-files '*.cpp' '*.hpp' | xargs clang-format-14 --dry-run --Werror

# clang-tidy (.clang-tidy) over the hand-written C++ and the generated guest
# and worker code; not part of `make test` (minutes per core). LINT_JOBS=N.
lint: deps $(BUILD)/build.ninja
	scripts/lint.sh $(BUILD)

# Installs scripts/pre-commit (format + clang-tidy on the staged files).
hooks:
	scripts/install-hooks.sh

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
