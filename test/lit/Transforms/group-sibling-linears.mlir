// RUN: %llmserve-opt %s -llmserve-group-sibling-linears -split-input-file | FileCheck %s

// A layer's q, k and v projections become one dispatch region at q's place:
// the shared input first, then each linear's weight and bias in order; the
// weight ops defined after q move before it, and q's user (defined between
// the linears) reads the region's first result.
// CHECK-LABEL: func.func @qkv
//  CHECK-SAME:     (%[[X:.*]]: tensor<?x64xbf16>, %[[P:.*]]: tensor<?xi32>)
//       CHECK:   %[[WQ:.*]] = llmserve.weight "q"
//  CHECK-NEXT:   %[[WK:.*]] = llmserve.weight "k"
//  CHECK-NEXT:   %[[BK:.*]] = llmserve.weight "k.bias"
//  CHECK-NEXT:   %[[WV:.*]] = llmserve.weight "v"
//  CHECK-NEXT:   %[[R:.*]]:3 = llmserve.dispatch_region(%[[X]], %[[WQ]], %[[WK]], %[[BK]], %[[WV]]) : (tensor<?x64xbf16>, tensor<128x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>) -> (tensor<?x128xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>) {
//  CHECK-NEXT:   ^bb0(%[[IN:.*]]: tensor<?x64xbf16>, %[[Q:.*]]: tensor<128x64xbf16>, %[[K:.*]]: tensor<32x64xbf16>, %[[B:.*]]: tensor<32xbf16>, %[[V:.*]]: tensor<32x64xbf16>):
//  CHECK-NEXT:     %[[YQ:.*]] = llmserve.linear %[[IN]], %[[Q]] :
//  CHECK-NEXT:     %[[YK:.*]] = llmserve.linear %[[IN]], %[[K]] bias %[[B]] :
//  CHECK-NEXT:     %[[YV:.*]] = llmserve.linear %[[IN]], %[[V]] :
//  CHECK-NEXT:     llmserve.yield %[[YQ]], %[[YK]], %[[YV]] :
//  CHECK-NEXT:   }
//  CHECK-NEXT:   llmserve.rope %[[R]]#0, %[[P]]
//  CHECK-NEXT:   llmserve.rope %[[R]]#1, %[[P]]
//  CHECK-NEXT:   return %{{.*}}, %{{.*}}, %[[R]]#2
func.func @qkv(%x: tensor<?x64xbf16>, %pos: tensor<?xi32>) -> (tensor<?x128xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>) {
  %wq = llmserve.weight "q" : tensor<128x64xbf16>
  %q = llmserve.linear %x, %wq : tensor<?x64xbf16>, tensor<128x64xbf16> -> tensor<?x128xbf16>
  %qr = llmserve.rope %q, %pos style neox head_dim 32 rotary_dim 32 theta 1.000000e+04 : tensor<?x128xbf16>, tensor<?xi32>
  %wk = llmserve.weight "k" : tensor<32x64xbf16>
  %bk = llmserve.weight "k.bias" : tensor<32xbf16>
  %k = llmserve.linear %x, %wk bias %bk : tensor<?x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16> -> tensor<?x32xbf16>
  %kr = llmserve.rope %k, %pos style neox head_dim 32 rotary_dim 32 theta 1.000000e+04 : tensor<?x32xbf16>, tensor<?xi32>
  %wv = llmserve.weight "v" : tensor<32x64xbf16>
  %v = llmserve.linear %x, %wv : tensor<?x64xbf16>, tensor<32x64xbf16> -> tensor<?x32xbf16>
  return %qr, %kr, %v : tensor<?x128xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>
}

// -----

// W8A8 siblings share the input's codes and scales, bound once.
// CHECK-LABEL: func.func @fp8_inputs
//       CHECK:   %[[C:.*]], %[[S:.*]] = llmserve.quantize_fp8
//       CHECK:   llmserve.dispatch_region(%[[C]], %{{.*}}, %{{.*}}, %[[S]], %{{.*}}, %{{.*}}) : (tensor<?x256xf8E4M3FN>, tensor<256x256xf8E4M3FN>, tensor<2x2xf32>, tensor<?x2xf32>, tensor<256x256xf8E4M3FN>, tensor<2x2xf32>) -> (tensor<?x256xbf16>, tensor<?x256xbf16>)
//       CHECK:     llmserve.linear %[[IN:.*]] input_scales %[[IS:.*]], %{{.*}} scales
//       CHECK:     llmserve.linear %[[IN]] input_scales %[[IS]], %{{.*}} scales
func.func @fp8_inputs(%x: tensor<?x256xbf16>) -> (tensor<?x256xbf16>, tensor<?x256xbf16>) {
  %codes, %scales = llmserve.quantize_fp8 %x : tensor<?x256xbf16> -> tensor<?x256xf8E4M3FN>
  %g = llmserve.weight "gate" quantized fp8_block128 values from fp8_block128 : tensor<256x256xf8E4M3FN>
  %gs = llmserve.weight "gate" quantized fp8_block128 scales from fp8_block128 : tensor<2x2xf32>
  %yg = llmserve.linear %codes input_scales %scales, %g scales %gs : tensor<?x256xf8E4M3FN>, tensor<256x256xf8E4M3FN> -> tensor<?x256xbf16>
  %u = llmserve.weight "up" quantized fp8_block128 values from fp8_block128 : tensor<256x256xf8E4M3FN>
  %us = llmserve.weight "up" quantized fp8_block128 scales from fp8_block128 : tensor<2x2xf32>
  %yu = llmserve.linear %codes input_scales %scales, %u scales %us : tensor<?x256xf8E4M3FN>, tensor<256x256xf8E4M3FN> -> tensor<?x256xbf16>
  return %yg, %yu : tensor<?x256xbf16>, tensor<?x256xbf16>
}

// -----

// Left alone: linears of an f32 input (no tensor-core kernel), a linear of
// another weight type than the first of its input's, a linear whose bias is
// computed after the first, and a linear without siblings.
// CHECK-LABEL: func.func @kept
//   CHECK-NOT:   llmserve.dispatch_region
func.func @kept(%f: tensor<?x64xf32>, %x: tensor<?x64xbf16>, %z: tensor<?x32xbf16>, %c: tensor<32xbf16>) -> (tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>) {
  %wf = llmserve.weight "f" : tensor<32x64xf32>
  %f1 = llmserve.linear %f, %wf : tensor<?x64xf32>, tensor<32x64xf32> -> tensor<?x32xf32>
  %f2 = llmserve.linear %f, %wf : tensor<?x64xf32>, tensor<32x64xf32> -> tensor<?x32xf32>
  %w = llmserve.weight "w" : tensor<32x64xbf16>
  %y = llmserve.linear %x, %w : tensor<?x64xbf16>, tensor<32x64xbf16> -> tensor<?x32xbf16>
  %w8 = llmserve.weight "w8" quantized int8_channel values : tensor<32x64xi8>
  %s8 = llmserve.weight "w8" quantized int8_channel scales : tensor<32xf32>
  %y8 = llmserve.linear %x, %w8 scales %s8 : tensor<?x64xbf16>, tensor<32x64xi8> -> tensor<?x32xbf16>
  %b = arith.addf %c, %c : tensor<32xbf16>
  %yb = llmserve.linear %x, %w bias %b : tensor<?x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16> -> tensor<?x32xbf16>
  %wz = llmserve.weight "z" : tensor<32x32xbf16>
  %yz = llmserve.linear %z, %wz : tensor<?x32xbf16>, tensor<32x32xbf16> -> tensor<?x32xbf16>
  return %f1, %f2, %y, %y8, %yb, %yz : tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>
}
