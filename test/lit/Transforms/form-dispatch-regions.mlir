// RUN: %llmserve-opt %s -llmserve-to-linalg -llmserve-form-dispatch-regions -split-input-file | FileCheck %s

// A gated MLP: gate and up projections of one input, and silu_mul of the
// two, become one region; the weights and the input are its inputs.
// CHECK-LABEL: func.func @gated_mlp
//  CHECK-SAME:   (%[[X:.+]]: tensor<?x64xf32>)
//   CHECK-DAG:   %[[WG:.+]] = llmserve.weight "gate" : tensor<128x64xf32>
//   CHECK-DAG:   %[[WU:.+]] = llmserve.weight "up" : tensor<128x64xf32>
//       CHECK:   %[[H:.+]] = llmserve.dispatch_region(%[[X]], %[[WG]], %[[WU]])
//  CHECK-SAME:       : (tensor<?x64xf32>, tensor<128x64xf32>, tensor<128x64xf32>) -> tensor<?x128xf32> {
//  CHECK-NEXT:   ^bb0(%[[IN:.+]]: tensor<?x64xf32>, %[[G:.+]]: tensor<128x64xf32>, %[[U:.+]]: tensor<128x64xf32>):
//  CHECK-NEXT:     %[[GATE:.+]] = llmserve.linear %[[IN]], %[[G]]
//  CHECK-NEXT:     %[[UP:.+]] = llmserve.linear %[[IN]], %[[U]]
//  CHECK-NEXT:     %[[S:.+]] = linalg.generic
//  CHECK-SAME:         ins(%[[GATE]], %[[UP]] : tensor<?x128xf32>, tensor<?x128xf32>) outs(%[[GATE]] : tensor<?x128xf32>)
//       CHECK:       math.exp
//       CHECK:     llmserve.yield %[[S]] : tensor<?x128xf32>
//  CHECK-NEXT:   }
//  CHECK-NEXT:   %[[D:.+]] = llmserve.linear %[[H]]
//  CHECK-NEXT:   return %[[D]]
func.func @gated_mlp(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %wg = llmserve.weight "gate" : tensor<128x64xf32>
  %wu = llmserve.weight "up" : tensor<128x64xf32>
  %wd = llmserve.weight "down" : tensor<64x128xf32>
  %gate = llmserve.linear %x, %wg : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  %up = llmserve.linear %x, %wu : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  %h = llmserve.silu_mul %gate, %up : tensor<?x128xf32>
  %d = llmserve.linear %h, %wd : tensor<?x128xf32>, tensor<64x128xf32> -> tensor<?x64xf32>
  return %d : tensor<?x64xf32>
}

// -----

// GPT-2's c_fc with its bias, then gelu.
// CHECK-LABEL: func.func @linear_bias_gelu
//  CHECK-SAME:   (%[[X:.+]]: tensor<?x32xf32>)
//       CHECK:   %[[W:.+]] = llmserve.weight "c_fc.weight"
//       CHECK:   %[[B:.+]] = llmserve.weight "c_fc.bias"
//       CHECK:   llmserve.dispatch_region(%[[X]], %[[W]], %[[B]])
//  CHECK-NEXT:   ^bb0(%[[IN:.+]]: tensor<?x32xf32>, %[[WA:.+]]: tensor<128x32xf32>, %[[BA:.+]]: tensor<128xf32>):
//  CHECK-NEXT:     %[[Y:.+]] = llmserve.linear %[[IN]], %[[WA]] bias %[[BA]]
//  CHECK-NEXT:     %[[G:.+]] = linalg.generic
//  CHECK-SAME:         ins(%[[Y]] : tensor<?x128xf32>) outs(%[[Y]] : tensor<?x128xf32>)
//       CHECK:       math.tanh
//       CHECK:     llmserve.yield %[[G]]
func.func @linear_bias_gelu(%x: tensor<?x32xf32>) -> tensor<?x128xf32> {
  %w = llmserve.weight "c_fc.weight" transposed : tensor<128x32xf32>
  %b = llmserve.weight "c_fc.bias" : tensor<128xf32>
  %y = llmserve.linear %x, %w bias %b : tensor<?x32xf32>, tensor<128x32xf32>, tensor<128xf32> -> tensor<?x128xf32>
  %g = llmserve.gelu %y approximation tanh : tensor<?x128xf32>
  return %g : tensor<?x128xf32>
}

// -----

// Quantized gate and up projections stay apart: the fused kernel reads
// float weights in panels.
// CHECK-LABEL: func.func @quantized_gated_mlp
//   CHECK-NOT:   llmserve.dispatch_region
//       CHECK:   llmserve.linear %{{.+}}, %{{.+}} scales
//       CHECK:   llmserve.linear %{{.+}}, %{{.+}} scales
//       CHECK:   linalg.generic
func.func @quantized_gated_mlp(%x: tensor<?x64xf32>) -> tensor<?x128xf32> {
  %gv = llmserve.weight "gate" quantized int8_channel values : tensor<128x64xi8>
  %gs = llmserve.weight "gate" quantized int8_channel scales : tensor<128xf32>
  %uv = llmserve.weight "up" quantized int8_channel values : tensor<128x64xi8>
  %us = llmserve.weight "up" quantized int8_channel scales : tensor<128xf32>
  %gate = llmserve.linear %x, %gv scales %gs : tensor<?x64xf32>, tensor<128x64xi8> -> tensor<?x128xf32>
  %up = llmserve.linear %x, %uv scales %us : tensor<?x64xf32>, tensor<128x64xi8> -> tensor<?x128xf32>
  %h = llmserve.silu_mul %gate, %up : tensor<?x128xf32>
  return %h : tensor<?x128xf32>
}

// -----

// Only the linears that can join: %up has a second user, so the region holds
// the gate projection and reads %up as an input.
// CHECK-LABEL: func.func @shared_output
//       CHECK:   %[[UP:.+]] = llmserve.linear
//       CHECK:   llmserve.dispatch_region(%{{.+}}, %{{.+}}, %[[UP]])
//  CHECK-NEXT:   ^bb0(%[[IN:.+]]: tensor<?x64xf32>, %[[G:.+]]: tensor<128x64xf32>, %[[U:.+]]: tensor<?x128xf32>):
//  CHECK-NEXT:     %[[GATE:.+]] = llmserve.linear %[[IN]], %[[G]]
//  CHECK-NEXT:     linalg.generic
//  CHECK-SAME:         ins(%[[GATE]], %[[U]] : tensor<?x128xf32>, tensor<?x128xf32>)
func.func @shared_output(%x: tensor<?x64xf32>) -> (tensor<?x128xf32>, tensor<?x128xf32>) {
  %wg = llmserve.weight "gate" : tensor<128x64xf32>
  %wu = llmserve.weight "up" : tensor<128x64xf32>
  %gate = llmserve.linear %x, %wg : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  %up = llmserve.linear %x, %wu : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  %h = llmserve.silu_mul %gate, %up : tensor<?x128xf32>
  return %h, %up : tensor<?x128xf32>, tensor<?x128xf32>
}

// -----

// Nothing to fuse: a weight of 40 columns (not whole 16-column panels), a
// weight that is a function argument, linears of different inputs past the
// first, and a narrow (bf16) op.
// CHECK-LABEL: func.func @left_alone
//   CHECK-NOT:   llmserve.dispatch_region
//       CHECK:   return
func.func @left_alone(%x: tensor<?x64xf32>, %wa: tensor<128x64xf32>, %xn: tensor<?x64xbf16>)
    -> (tensor<?x40xf32>, tensor<?x128xf32>, tensor<?x128xbf16>) {
  %w40 = llmserve.weight "narrow" : tensor<40x64xf32>
  %a = llmserve.linear %x, %w40 : tensor<?x64xf32>, tensor<40x64xf32> -> tensor<?x40xf32>
  %ga = llmserve.gelu %a : tensor<?x40xf32>
  %b = llmserve.linear %x, %wa : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  %gb = llmserve.gelu %b : tensor<?x128xf32>
  %wn = llmserve.weight "n" : tensor<128x64xbf16>
  %n = llmserve.linear %xn, %wn : tensor<?x64xbf16>, tensor<128x64xbf16> -> tensor<?x128xbf16>
  %gn = llmserve.gelu %n : tensor<?x128xbf16>
  return %ga, %gb, %gn : tensor<?x40xf32>, tensor<?x128xf32>, tensor<?x128xbf16>
}

// -----

// Of two linears of different inputs, the first joins and the second stays
// outside, its result an input of the region.
// CHECK-LABEL: func.func @different_inputs
//  CHECK-SAME:   (%[[X:.+]]: tensor<?x64xf32>, %[[Y:.+]]: tensor<?x64xf32>)
//       CHECK:   %[[UP:.+]] = llmserve.linear %[[Y]]
//       CHECK:   llmserve.dispatch_region(%[[X]], %{{.+}}, %[[UP]])
func.func @different_inputs(%x: tensor<?x64xf32>, %y: tensor<?x64xf32>) -> tensor<?x128xf32> {
  %wg = llmserve.weight "gate" : tensor<128x64xf32>
  %wu = llmserve.weight "up" : tensor<128x64xf32>
  %gate = llmserve.linear %x, %wg : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  %up = llmserve.linear %y, %wu : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  %h = llmserve.silu_mul %gate, %up : tensor<?x128xf32>
  return %h : tensor<?x128xf32>
}
