// RUN: %llmserve-opt %s -llmserve-narrow-linear-weights -split-input-file | FileCheck %s
// RUN: %llmserve-opt %s -llmserve-narrow-linear-weights=dtype=f16 -split-input-file | FileCheck %s --check-prefix=F16
// RUN: %llmserve-opt %s -llmserve-narrow-linear-weights=dtype=f8 -split-input-file -verify-diagnostics

// Weights only linears read become bf16 (f16); a tied embedding table, a
// norm's weight and quantized arrays keep their types, and so do the
// activations.
// CHECK-LABEL: func.func @weights
//       CHECK:   llmserve.weight "up" : tensor<32x16xbf16>
//       CHECK:   llmserve.weight "emb" : tensor<32x16xf32>
//       CHECK:   llmserve.weight "norm" : tensor<16xf32>
//       CHECK:   llmserve.weight "q" quantized int8_channel values : tensor<32x16xi8>
//       CHECK:   llmserve.linear %{{.*}}, %{{.*}} : tensor<?x16xf32>, tensor<32x16xbf16> -> tensor<?x32xf32>
//       CHECK:   llmserve.linear %{{.*}}, %{{.*}} : tensor<?x16xf32>, tensor<32x16xf32> -> tensor<?x32xf32>
// F16-LABEL: func.func @weights
//       F16:   llmserve.weight "up" : tensor<32x16xf16>
// expected-error @below {{unknown weight type 'f8' (expected bf16 or f16)}}
module {
func.func @weights(%x: tensor<?x16xf32>, %ids: tensor<?xi32>) -> (tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x16xf32>, tensor<?x32xf32>) {
  %w = llmserve.weight "up" : tensor<32x16xf32>
  %e = llmserve.weight "emb" : tensor<32x16xf32>
  %n = llmserve.weight "norm" : tensor<16xf32>
  %v = llmserve.weight "q" quantized int8_channel values : tensor<32x16xi8>
  %s = llmserve.weight "q" quantized int8_channel scales : tensor<32xf32>
  %y = llmserve.linear %x, %w : tensor<?x16xf32>, tensor<32x16xf32> -> tensor<?x32xf32>
  %t = llmserve.embedding %e, %ids : tensor<32x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
  %l = llmserve.linear %x, %e : tensor<?x16xf32>, tensor<32x16xf32> -> tensor<?x32xf32>
  %h = llmserve.rms_norm %t, %n epsilon 1.0e-05 : tensor<?x16xf32>, tensor<16xf32>
  %q = llmserve.linear %x, %v scales %s : tensor<?x16xf32>, tensor<32x16xi8> -> tensor<?x32xf32>
  return %y, %l, %h, %q : tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x16xf32>, tensor<?x32xf32>
}
}
