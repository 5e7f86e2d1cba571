// RUN: %llmserve-opt %s -llmserve-narrow-linear-weights -split-input-file | FileCheck %s
// RUN: %llmserve-opt %s -llmserve-narrow-linear-weights=dtype=f16 -split-input-file | FileCheck %s --check-prefix=F16

// Weights only linears read become bf16 (f16); a tied embedding table (also
// where another weight op of the same tensor feeds the head alone), a
// norm's weight and quantized arrays keep their types, and so do the
// activations.
// CHECK-LABEL: func.func @weights
//       CHECK:   llmserve.weight "up" : tensor<32x16xbf16>
//       CHECK:   llmserve.weight "emb" : tensor<32x16xf32>
//       CHECK:   llmserve.weight "norm" : tensor<16xf32>
//       CHECK:   llmserve.weight "q" quantized int8_channel values : tensor<32x16xi8>
//       CHECK:   llmserve.linear %{{.*}}, %{{.*}} : tensor<?x16xf32>, tensor<32x16xbf16> -> tensor<?x32xf32>
//       CHECK:   llmserve.linear %{{.*}}, %{{.*}} : tensor<?x16xf32>, tensor<32x16xf32> -> tensor<?x32xf32>
//       CHECK:   llmserve.weight "emb" : tensor<32x16xf32>
//       CHECK:   llmserve.linear %{{.*}}, %{{.*}} : tensor<?x16xf32>, tensor<32x16xf32> -> tensor<?x32xf32>
// F16-LABEL: func.func @weights
//       F16:   llmserve.weight "up" : tensor<32x16xf16>
func.func @weights(%x: tensor<?x16xf32>, %ids: tensor<?xi32>) -> (tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x16xf32>, tensor<?x32xf32>, tensor<?x32xf32>) {
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
  %head = llmserve.weight "emb" : tensor<32x16xf32>
  %o = llmserve.linear %x, %head : tensor<?x16xf32>, tensor<32x16xf32> -> tensor<?x32xf32>
  return %y, %l, %h, %q, %o : tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x16xf32>, tensor<?x32xf32>, tensor<?x32xf32>
}

// -----

// A mixture's stacked experts narrow too.
// CHECK-LABEL: func.func @experts
//       CHECK:   llmserve.weight "e.{}.w" stacked 4 : tensor<4x32x16xbf16>
//       CHECK:   llmserve.expert_linear %{{.*}}, %{{.*}} experts %{{.*}} : tensor<?x16xf32>, tensor<4x32x16xbf16>, tensor<?x2xi32> -> tensor<?x32xf32>
func.func @experts(%x: tensor<?x16xf32>, %e: tensor<?x2xi32>) -> tensor<?x32xf32> {
  %w = llmserve.weight "e.{}.w" stacked 4 : tensor<4x32x16xf32>
  %y = llmserve.expert_linear %x, %w experts %e
      : tensor<?x16xf32>, tensor<4x32x16xf32>, tensor<?x2xi32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
