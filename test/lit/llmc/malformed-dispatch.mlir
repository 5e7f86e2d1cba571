// An op whose llmserve.dispatch is neither one kernel's {kernel, symbol, grid}
// dictionary nor a non-empty array of them is refused with its location (the
// outlining passes skip ops that already carry the attribute, so it reaches
// the bundle writer).
// RUN: not %llmc compile %s -o %t.llmb 2>&1 | FileCheck %s
// RUN: sed 's/, 7\]/]/' %s > %t.no-grid.mlir
// RUN: not %llmc compile %t.no-grid.mlir -o %t.llmb 2>&1 | FileCheck %s
// RUN: sed 's/\[{kernel = "k"}, 7\]/[]/' %s > %t.empty.mlir
// RUN: not %llmc compile %t.empty.mlir -o %t.llmb 2>&1 | FileCheck %s

// CHECK: :[[@LINE+3]]:8: error: 'llmserve.silu_mul' op has a malformed llmserve.dispatch (expected a {kernel, symbol, grid} dictionary or a non-empty array of them)
// CHECK-NOT: error
func.func @f(%g: tensor<4x8xf32>, %u: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = llmserve.silu_mul %g, %u {llmserve.dispatch = [{kernel = "k"}, 7]} : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
