// Invalid input to `llmc compile` gets a located diagnostic and exit code 1.
// RUN: not %llmc compile %s -o %t.llmb 2>&1 | FileCheck %s
// RUN: not test -e %t.llmb/manifest.json

// CHECK: invalid-ir.mlir:[[@LINE+3]]:8: error: 'llmserve.linear' op
func.func @f(%x: tensor<?x32xf32>) -> tensor<?x128xf32> {
  %w = llmserve.weight "w" : tensor<128x16xf32>
  %y = llmserve.linear %x, %w : tensor<?x32xf32>, tensor<128x16xf32> -> tensor<?x128xf32>
  return %y : tensor<?x128xf32>
}
