// An op the host program cannot run (not outlined into a kernel) is refused
// with its location.
// RUN: not %llmc compile %s -o %t.llmb 2>&1 | FileCheck %s

// CHECK: unknown-op.mlir:[[@LINE+2]]:8: error: 'arith.addf' op cannot run in the host program (not outlined into a kernel)
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = arith.addf %x, %x : tensor<4xf32>
  return %y : tensor<4xf32>
}
