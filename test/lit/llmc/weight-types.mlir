// A bundle reads a tensor into one buffer, so every weight op of it must read
// one element type (here row-major both: 8 rows are no whole panel).
// RUN: not %llmc compile %s -o %t.llmb 2>&1 | FileCheck %s
// CHECK: error: 'llmserve.weight' op reads 'w' as 'bf16', which another weight op reads as 'f32'

func.func @f(%x: tensor<4x16xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %a = llmserve.weight "w" : tensor<8x16xf32>
  %b = llmserve.weight "w" : tensor<8x16xbf16>
  %y = llmserve.linear %x, %a : tensor<4x16xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
  %z = llmserve.linear %x, %b : tensor<4x16xf32>, tensor<8x16xbf16> -> tensor<4x8xf32>
  return %y, %z : tensor<4x8xf32>, tensor<4x8xf32>
}
