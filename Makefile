# `make demo` and `make test` work on a fresh machine: both install what is
# missing, configure and build into build/ (binaries in build/bin/).
# `make build DEPS=--build TARGETS="llmrun llmc"` installs and builds only
# those (deploy/Dockerfile).
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
LLVM_DIR := /usr/lib/llvm-22
CLANG_FLAGS := -G Ninja \
  -DCMAKE_C_COMPILER=$(LLVM_DIR)/bin/clang -DCMAKE_CXX_COMPILER=$(LLVM_DIR)/bin/clang++ \
  -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld
CMAKE_FLAGS := $(CLANG_FLAGS) -DCMAKE_BUILD_TYPE=Release \
  -DMLIR_DIR=$(LLVM_DIR)/lib/cmake/mlir -DLLVM_EXTERNAL_LIT=$(LLVM_DIR)/bin/lit
# `make fuzz` (docs/fuzzing.md): the libFuzzer targets, built with ASan and
# UBSan into build-fuzz/ and run FUZZ_SECONDS each.
FUZZ_DIR ?= build-fuzz
FUZZ_SECONDS ?= 60
# `make sanitize` (docs/fuzzing.md): the unit tests and the server API tests
# under ASan and UBSan (build-asan/), the engine, server and thread-pool
# tests under TSan (build-tsan/). The server tests' bundles come from
# build/'s llmc.
SANITIZE_FLAGS := $(CLANG_FLAGS) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DLLMSERVE_BUILD_COMPILER=OFF -DLLMSERVE_LLMC=$(abspath $(BUILD_DIR))/bin/llmc
export ASAN_OPTIONS ?= detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS ?= print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS ?= halt_on_error=1:second_deadlock_stack=1

.PHONY: all deps configure build test demo fuzz sanitize clean

all: build

deps:
	./tools/install-deps.sh $(DEPS)

$(BUILD_DIR)/build.ninja:
	cmake -S . -B $(BUILD_DIR) $(CMAKE_FLAGS)

configure: deps $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) $(if $(TARGETS),--target $(TARGETS))

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

demo: build
	./examples/demo.sh $(BUILD_DIR)

fuzz: deps
	cmake -S . -B $(FUZZ_DIR) $(CLANG_FLAGS) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DLLMSERVE_BUILD_COMPILER=OFF -DLLMSERVE_FUZZ=ON
	cmake --build $(FUZZ_DIR) -j $(JOBS) --target fuzzers
	./test/fuzz/run.sh $(FUZZ_DIR) $(FUZZ_SECONDS)

sanitize: build
	cmake -S . -B build-asan $(SANITIZE_FLAGS) -DLLMSERVE_SANITIZE=address,undefined
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -j $(JOBS) -L unit
	cd build-asan && ctest --output-on-failure -R '^server\.(bundles|api)$$'
	cmake -S . -B build-tsan $(SANITIZE_FLAGS) -DLLMSERVE_SANITIZE=thread
	cmake --build build-tsan -j $(JOBS) --target llmserve_core_tests llmserve_server_tests cpu_tests
	build-tsan/bin/llmserve_core_tests
	build-tsan/bin/llmserve_server_tests
	build-tsan/bin/cpu_tests --gtest_filter='ThreadPool*:CpuExecutor*:StepExecutor*'

clean:
	rm -rf $(BUILD_DIR) $(FUZZ_DIR) build-asan build-tsan
