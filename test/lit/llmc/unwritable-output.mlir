// An output that cannot be created is a clear error, not a crash.
// RUN: rm -rf %t && mkdir -p %t && touch %t/file
// RUN: not %llmc compile %s -o %t/file/model.llmb 2>&1 | FileCheck %s

// CHECK: llmc: error: cannot create {{.*}}file/model.llmb
func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = llmserve.silu_mul %x, %x : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
