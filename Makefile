# `make demo` and `make test` work on a fresh machine: both install what is
# missing, configure and build into build/ (binaries in build/bin/).
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
LLVM_DIR := /usr/lib/llvm-22
CMAKE_FLAGS := -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER=$(LLVM_DIR)/bin/clang -DCMAKE_CXX_COMPILER=$(LLVM_DIR)/bin/clang++ \
  -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld \
  -DMLIR_DIR=$(LLVM_DIR)/lib/cmake/mlir -DLLVM_EXTERNAL_LIT=$(LLVM_DIR)/bin/lit

.PHONY: all deps configure build test demo clean

all: build

deps:
	./tools/install-deps.sh

$(BUILD_DIR)/build.ninja:
	cmake -S . -B $(BUILD_DIR) $(CMAKE_FLAGS)

configure: deps $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

demo: build
	./examples/demo.sh $(BUILD_DIR)

clean:
	rm -rf $(BUILD_DIR)
