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

.PHONY: all deps configure build test demo fuzz clean

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

clean:
	rm -rf $(BUILD_DIR) $(FUZZ_DIR)
