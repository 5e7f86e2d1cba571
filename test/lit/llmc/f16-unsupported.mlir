// The CPU kernels compute in f32; other float types are refused, located.
// RUN: not %llmc compile %s -o %t.llmb 2>&1 | FileCheck %s

// CHECK: f16-unsupported.mlir:[[@LINE+2]]:8: error: 'llmserve.silu_mul' op CPU kernels compute in f32; got 'tensor<4x8xf16>'
func.func @f(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %y = llmserve.silu_mul %x, %x : tensor<4x8xf16>
  return %y : tensor<4x8xf16>
}
