// An op whose llmserve.scratch is not an array of non-empty arrays of size
// strings, or names a push constant the op does not have, is refused with its
// location.
// RUN: not %llmc compile %s -o %t.llmb 2>&1 | FileCheck %s --check-prefix=SHAPE
// RUN: sed 's/\[7\]/[["$9"]]/' %s > %t.constant.mlir
// RUN: not %llmc compile %t.constant.mlir -o %t.llmb 2>&1 | FileCheck %s --check-prefix=CONSTANT

// SHAPE: :[[@LINE+4]]:8: error: 'llmserve.silu_mul' op has a malformed llmserve.scratch (expected arrays of size strings)
// CONSTANT: :[[@LINE+3]]:8: error: 'llmserve.silu_mul' op malformed size expression $9
// SHAPE-NOT: error
func.func @f(%g: tensor<4x8xf32>, %u: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = llmserve.silu_mul %g, %u {llmserve.dispatch = {kernel = "k", symbol = "s", grid = ["1", "1", "1"]}, llmserve.scratch = [7]} : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
