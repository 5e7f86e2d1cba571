// RUN: %llmserve-opt %s -llmserve-to-linalg -split-input-file | FileCheck %s

// silu_mul: g / (1 + exp(-g)) * u, element by element; the init is the
// first input, which the body does not read.
// CHECK: #[[ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @silu_mul
//  CHECK-SAME:   (%[[G:.+]]: tensor<?x64xf32>, %[[U:.+]]: tensor<?x64xf32>)
//       CHECK:   %[[Y:.+]] = linalg.generic {indexing_maps = [#[[ID]], #[[ID]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
//  CHECK-SAME:       ins(%[[G]], %[[U]] : tensor<?x64xf32>, tensor<?x64xf32>) outs(%[[G]] : tensor<?x64xf32>)
//       CHECK:   ^bb0(%[[A:.+]]: f32, %[[B:.+]]: f32, %{{.+}}: f32):
//       CHECK:     %[[NEG:.+]] = arith.negf %[[A]] : f32
//       CHECK:     %[[EXP:.+]] = math.exp %[[NEG]] : f32
//       CHECK:     %[[DEN:.+]] = arith.addf %{{.+}}, %[[EXP]] : f32
//       CHECK:     %[[SIG:.+]] = arith.divf %[[A]], %[[DEN]] : f32
//       CHECK:     %[[OUT:.+]] = arith.mulf %[[SIG]], %[[B]] : f32
//       CHECK:     linalg.yield %[[OUT]] : f32
//       CHECK:   return %[[Y]]
func.func @silu_mul(%g: tensor<?x64xf32>, %u: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %y = llmserve.silu_mul %g, %u : tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// gelu: 0.5 x (1 + erf(x / sqrt 2)), or the tanh approximation.
// CHECK-LABEL: func.func @gelu
//       CHECK:   linalg.generic
//       CHECK:     math.erf
//       CHECK:   linalg.generic
//       CHECK:     arith.constant 4.471500e-02 : f32
//       CHECK:     math.tanh
func.func @gelu(%x: tensor<?x32xf32>) -> (tensor<?x32xf32>, tensor<?x32xf32>) {
  %e = llmserve.gelu %x approximation none : tensor<?x32xf32>
  %t = llmserve.gelu %x approximation tanh : tensor<?x32xf32>
  return %e, %t : tensor<?x32xf32>, tensor<?x32xf32>
}

// -----

// softcap: cap * tanh(x / cap).
// CHECK-LABEL: func.func @softcap
//       CHECK:   linalg.generic
//       CHECK:     %[[CAP:.+]] = arith.constant 3.000000e+01 : f32
//       CHECK:     %[[Q:.+]] = arith.divf %{{.+}}, %[[CAP]] : f32
//       CHECK:     %[[T:.+]] = math.tanh %[[Q]] : f32
//       CHECK:     arith.mulf %{{.+}}, %[[T]] : f32
func.func @softcap(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %y = llmserve.softcap %x cap 30.0 : tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// gelu_mul: gelu(g) * u, reading both inputs.
// CHECK-LABEL: func.func @gelu_mul
//       CHECK:   linalg.generic
//  CHECK-SAME:       ins(%{{.+}}, %{{.+}} : tensor<?x32xf32>, tensor<?x32xf32>)
//       CHECK:   ^bb0(%[[A:.+]]: f32, %[[B:.+]]: f32, %{{.+}}: f32):
//       CHECK:     math.tanh
//       CHECK:     %[[OUT:.+]] = arith.mulf %{{.+}}, %[[B]] : f32
//  CHECK-NEXT:     linalg.yield %[[OUT]] : f32
func.func @gelu_mul(%g: tensor<?x32xf32>, %u: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %y = llmserve.gelu_mul %g, %u approximation tanh : tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// Left alone: an op already outlined, a non-f32 op (the CPU kernels refuse
// it by name), and every other op, even one whose result is unused (no
// folding, no dead-code removal).
// CHECK-LABEL: func.func @left_alone
//       CHECK:   llmserve.silu_mul %{{.*}} {llmserve.dispatch = {kernel = "k"}} : tensor<4x8xf32>
//       CHECK:   llmserve.silu_mul %{{.*}} : tensor<4x8xf16>
//       CHECK:   llmserve.kv_write
//   CHECK-NOT:   linalg.generic
func.func @left_alone(%a: tensor<4x8xf32>, %h: tensor<4x8xf16>, %k: tensor<?x32xf32>,
                      %cache: tensor<?x4x2x16xf32> {llmserve.kv_cache = {layer = 0 : i64, role = "k"}},
                      %slots: tensor<?xi32>) -> (tensor<4x8xf32>, tensor<4x8xf16>) {
  %y = llmserve.silu_mul %a, %a {llmserve.dispatch = {kernel = "k"}} : tensor<4x8xf32>
  %z = llmserve.silu_mul %h, %h : tensor<4x8xf16>
  %c = llmserve.kv_write %k into %cache at %slots : tensor<?x32xf32>, tensor<?x4x2x16xf32>, tensor<?xi32>
  return %y, %z : tensor<4x8xf32>, tensor<4x8xf16>
}
