// RUN: not %llmc compile %s -o %t.llmb 2>&1 | FileCheck %s

// CHECK: unregistered-op.mlir:[[@LINE+2]]:8: error: custom op 'llmserve.frobnicate' is unknown
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = llmserve.frobnicate %x : tensor<4xf32>
  return %y : tensor<4xf32>
}
