// RUN: %llmserve-opt %s -llmserve-read-fp8-weights -split-input-file | FileCheck %s

// An FP8 checkpoint's weight that linears read becomes its codes and block
// scales as stored (rows [128, 300) span blocks 1 and 2), which every
// linear reading it takes instead, bias and all.
// CHECK-LABEL: func.func @linears
//   CHECK-DAG:   %[[V:.*]] = llmserve.weight "o.weight" rows [128, 300] quantized fp8_block128 values from fp8_block128 : tensor<172x256xf8E4M3FN>
//   CHECK-DAG:   %[[S:.*]] = llmserve.weight "o.weight" rows [128, 300] quantized fp8_block128 scales from fp8_block128 : tensor<2x2xf32>
//       CHECK:   llmserve.linear %{{.*}}, %[[V]] scales %[[S]] : tensor<?x256xbf16>, tensor<172x256xf8E4M3FN> -> tensor<?x172xbf16>
//       CHECK:   llmserve.linear %{{.*}}, %[[V]] scales %[[S]] bias %{{.*}} : tensor<?x256xbf16>, tensor<172x256xf8E4M3FN>, tensor<172xbf16> -> tensor<?x172xbf16>
//   CHECK-NOT:   llmserve.weight "o.weight" rows [128, 300] from
func.func @linears(%x: tensor<?x256xbf16>, %b: tensor<172xbf16>) -> (tensor<?x172xbf16>, tensor<?x172xbf16>) {
  %w = llmserve.weight "o.weight" rows [128, 300] from fp8_block128 : tensor<172x256xbf16>
  %y = llmserve.linear %x, %w : tensor<?x256xbf16>, tensor<172x256xbf16> -> tensor<?x172xbf16>
  %z = llmserve.linear %x, %w bias %b : tensor<?x256xbf16>, tensor<172x256xbf16>, tensor<172xbf16> -> tensor<?x172xbf16>
  return %y, %z : tensor<?x172xbf16>, tensor<?x172xbf16>
}

// -----

// Weights stay dequantized when their rows start within a block, when
// something other than a linear's weight reads them (an embedding, a
// linear's input), when they are stacked experts or transposed, and when
// they are not an FP8 checkpoint's.
// CHECK-LABEL: func.func @kept
//   CHECK-NOT:   quantized fp8_block128
//       CHECK:   llmserve.weight "q.weight" rows [64, 192] from fp8_block128 : tensor<128x256xbf16>
//       CHECK:   llmserve.weight "emb.weight" from fp8_block128 : tensor<128x256xbf16>
//       CHECK:   llmserve.weight "a.weight" from fp8_block128 : tensor<4x256xbf16>
//       CHECK:   llmserve.weight "e.{}.w" stacked 2 from fp8_block128 : tensor<2x128x256xbf16>
//       CHECK:   llmserve.weight "t.weight" transposed from fp8_block128 : tensor<128x256xbf16>
//       CHECK:   llmserve.weight "f.weight" : tensor<128x256xbf16>
//   CHECK-NOT:   quantized fp8_block128
func.func @kept(%x: tensor<?x256xbf16>, %ids: tensor<?xi32>, %ex: tensor<?x2xi32>) -> (tensor<?x128xbf16>, tensor<?x256xbf16>, tensor<?x128xbf16>, tensor<4x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>) {
  %q = llmserve.weight "q.weight" rows [64, 192] from fp8_block128 : tensor<128x256xbf16>
  %yq = llmserve.linear %x, %q : tensor<?x256xbf16>, tensor<128x256xbf16> -> tensor<?x128xbf16>
  %e = llmserve.weight "emb.weight" from fp8_block128 : tensor<128x256xbf16>
  %ye = llmserve.embedding %e, %ids : tensor<128x256xbf16>, tensor<?xi32> -> tensor<?x256xbf16>
  %yh = llmserve.linear %x, %e : tensor<?x256xbf16>, tensor<128x256xbf16> -> tensor<?x128xbf16>
  %a = llmserve.weight "a.weight" from fp8_block128 : tensor<4x256xbf16>
  %ya = llmserve.linear %a, %q : tensor<4x256xbf16>, tensor<128x256xbf16> -> tensor<4x128xbf16>
  %s = llmserve.weight "e.{}.w" stacked 2 from fp8_block128 : tensor<2x128x256xbf16>
  %ys = llmserve.expert_linear %x, %s experts %ex : tensor<?x256xbf16>, tensor<2x128x256xbf16>, tensor<?x2xi32> -> tensor<?x128xbf16>
  %t = llmserve.weight "t.weight" transposed from fp8_block128 : tensor<128x256xbf16>
  %yt = llmserve.linear %x, %t : tensor<?x256xbf16>, tensor<128x256xbf16> -> tensor<?x128xbf16>
  %f = llmserve.weight "f.weight" : tensor<128x256xbf16>
  %yf = llmserve.linear %x, %f : tensor<?x256xbf16>, tensor<128x256xbf16> -> tensor<?x128xbf16>
  return %yq, %ye, %yh, %ya, %ys, %yt, %yf : tensor<?x128xbf16>, tensor<?x256xbf16>, tensor<?x128xbf16>, tensor<4x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>
}
