// Narrowing to bf16 needs the step contract: a plain float argument keeps the
// caller's type, so it is refused, located.
// RUN: not %llmc compile %s -o %t.llmb --target sm_90 2>&1 | FileCheck %s

// CHECK: sm90-narrow-argument.mlir:[[@LINE+1]]:1: error: 'func.func' op argument #0 is neither a step-contract array nor a KV cache
func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = llmserve.silu_mul %x, %x : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
