// RUN: not %llmserve-opt %s -llmserve-narrow-storage=dtype=f8 2>&1 | FileCheck %s

// CHECK: error: unknown storage type 'f8' (expected bf16 or f16)
func.func @f() {
  return
}
