// RUN: %llmserve-opt %s --pass-pipeline='builtin.module(llmserve-to-linalg,llmserve-form-dispatch-regions,llmserve-to-cpu-kernels,builtin.module(one-shot-bufferize,llmserve-apply-cpu-schedule,canonicalize))' -split-input-file | FileCheck %s

// After bufferization the elementwise kernel's generic writes in place into
// the output buffer's slice; the schedule tiles it by 16 elements and
// vectorizes each tile with a mask (the last tile is partial), so the body is
// vector<16xf32> arithmetic between masked loads and a masked store.
// CHECK-LABEL: module @kernels
//       CHECK:   func.func @llmserve_d0_generic
//   CHECK-NOT:     bufferization.
//   CHECK-NOT:     linalg.generic
//       CHECK:     scf.for %[[I:.+]] = %{{.+}} to %[[N:.+]] step %c16
//       CHECK:       %[[SIZE:.+]] = affine.min #{{.+}}(%[[I]])[%[[N]]]
//       CHECK:       %[[MASK:.+]] = vector.create_mask %[[SIZE]] : vector<16xi1>
//       CHECK:       %[[G:.+]] = vector.maskedload %{{.+}}[%{{.+}}], %[[MASK]], %{{.+}} : memref<?xf32, strided<[1], offset: ?>>, vector<16xi1>, vector<16xf32> into vector<16xf32>
//       CHECK:       %[[U:.+]] = vector.maskedload %{{.+}}[%{{.+}}], %[[MASK]], %{{.+}} : memref<?xf32, strided<[1], offset: ?>>, vector<16xi1>, vector<16xf32> into vector<16xf32>
//       CHECK:       math.exp %{{.+}} : vector<16xf32>
//       CHECK:       %[[Y:.+]] = arith.mulf %{{.+}}, %[[U]] : vector<16xf32>
//       CHECK:       vector.maskedstore %{{.+}}[%{{.+}}], %[[MASK]], %[[Y]] : memref<?xf32, strided<[1], offset: ?>>, vector<16xi1>, vector<16xf32>
func.func @silu_mul(%g: tensor<?x64xf32>, %u: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %y = llmserve.silu_mul %g, %u : tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// The linear contraction on packed weights: k in chunks of 256; in each,
// rows in tiles of 8 and panels in threes, each tile a k loop that carries
// its 24 accumulators in registers (loaded from y, which holds the zeros or
// the previous chunk's sums, before the loop and stored after it) and per
// step loads three panel rows of w, broadcasts eight elements of x and
// issues 24 FMAs. The panel and rows left over run one at a time with the
// same per-lane arithmetic. No linalg op is left.
// CHECK-LABEL: module @kernels
//       CHECK:   func.func @llmserve_d0_linear
//   CHECK-NOT:     linalg.
//       CHECK:     scf.for
//       CHECK:       vector.store %{{.+}} : memref<?x4x16xf32>, vector<16xf32>
//       CHECK:     scf.for %{{.+}} = %c0 to %c512 step %c256 {
//       CHECK:       scf.for %{{.+}} step %c8 {
//       CHECK:         scf.for %{{.+}} step %c3 {
//  CHECK-COUNT-24:         vector.load %{{.+}} : memref<?x4x16xf32>, vector<16xf32>
//       CHECK:           scf.for %{{.+}} = %c0 to %c256 step %c1 iter_args({{.+}}) -> ({{(vector<16xf32>, ){23}vector}}<16xf32>) {
//   CHECK-COUNT-8:           vector.load %{{.+}} : memref<?x512xf32>, vector<1xf32>
//   CHECK-COUNT-3:           vector.load %{{.+}} : memref<4x512x16xf32>, vector<16xf32>
//  CHECK-COUNT-24:           vector.fma
//   CHECK-NEXT:              scf.yield
//  CHECK-COUNT-24:         vector.store %{{.+}} : memref<?x4x16xf32>, vector<16xf32>
//       CHECK:         scf.for %{{.+}} step %c3 {
//       CHECK:           scf.for %{{.+}} step %c1 {
//       CHECK:             scf.for %{{.+}} iter_args({{.+}}) -> ({{(vector<16xf32>, ){7}vector}}<16xf32>) {
//   CHECK-COUNT-8:             vector.fma
//   CHECK-NEXT:                scf.yield
//       CHECK:       scf.for %{{.+}} step %c8 {
//       CHECK:         scf.for %{{.+}} step %c1 {
//       CHECK:           scf.for %{{.+}} step %c3 {
//       CHECK:             scf.for %{{.+}} iter_args({{.+}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>) {
//   CHECK-COUNT-3:             vector.fma
//   CHECK-NEXT:                scf.yield
//       CHECK:           scf.for %{{.+}} step %c3 {
//       CHECK:             scf.for %{{.+}} step %c1 {
//       CHECK:               scf.for %{{.+}} iter_args({{.+}}) -> (vector<16xf32>) {
//       CHECK:                 vector.fma
//  CHECK-NEXT:                 scf.yield
func.func @linear(%x: tensor<?x512xf32>) -> tensor<?x64xf32> {
  %w = llmserve.weight "w" : tensor<64x512xf32>
  %y = llmserve.linear %x, %w : tensor<?x512xf32>, tensor<64x512xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// A gated MLP's dispatch region: both contractions get the linear schedule
// (the gate's accumulates into the block buffer on the stack, the up's into
// the output), then the SiLU epilogue runs on the block one vector<16xf32>
// panel row at a time, reading the gate from the stack buffer and the up
// projection from the output, where it writes. No linalg op is left.
// CHECK-LABEL: module @kernels
//       CHECK:   func.func @llmserve_d0_dispatch_region
//   CHECK-NOT:     linalg.
//       CHECK:     %[[STACK:.+]] = memref.alloca() : memref<64x6x16xf32>
//       CHECK:     vector.store %{{.+}}, %[[STACK]]
//       CHECK:     scf.for %{{.+}} iter_args({{.+}}) -> ({{(vector<16xf32>, ){23}vector}}<16xf32>) {
//  CHECK-COUNT-24:   vector.fma
//       CHECK:     vector.store %{{.+}}, %[[STACK]]
//       CHECK:     scf.for %{{.+}} iter_args({{.+}}) -> ({{(vector<16xf32>, ){23}vector}}<16xf32>) {
//  CHECK-COUNT-24:   vector.fma
//       CHECK:     %[[GATE:.+]] = vector.load %[[STACK]][{{.+}}] : memref<64x6x16xf32>, vector<16xf32>
//   CHECK-NOT:     scf.for
//       CHECK:     %[[UP:.+]] = vector.load %[[Y:.+]][%[[ROW:.+]], %[[PANEL:.+]], %c0] : memref<?x3x16xf32>, vector<16xf32>
//  CHECK-NEXT:     arith.negf %[[GATE]] : vector<16xf32>
//  CHECK-NEXT:     math.exp
//       CHECK:     arith.mulf %{{.+}}, %[[UP]] : vector<16xf32>
//  CHECK-NEXT:     vector.store %{{.+}}, %[[Y]][%[[ROW]], %[[PANEL]], %c0] : memref<?x3x16xf32>, vector<16xf32>
//   CHECK-NOT:   vector<1x1x16xf32>
func.func @gated_mlp(%x: tensor<?x64xf32>) -> tensor<?x48xf32> {
  %wg = llmserve.weight "gate" : tensor<48x64xf32>
  %wu = llmserve.weight "up" : tensor<48x64xf32>
  %g = llmserve.linear %x, %wg : tensor<?x64xf32>, tensor<48x64xf32> -> tensor<?x48xf32>
  %u = llmserve.linear %x, %wu : tensor<?x64xf32>, tensor<48x64xf32> -> tensor<?x48xf32>
  %h = llmserve.silu_mul %g, %u : tensor<?x48xf32>
  return %h : tensor<?x48xf32>
}

// -----

// rms_norm with the residual, D = 40: every op a row at a time, the row in
// 16-wide vectors (two) and a static remainder of 8. The sum of squares
// folds each chunk into the row's running sum in index order (an ordered
// vector.reduction), carried across the chunks in a register; rsqrt per row
// in place; then s · rsqrt · weight. No linalg op is left.
// CHECK-LABEL: module @kernels
//       CHECK:   func.func @llmserve_d0_rms_norm
//   CHECK-NOT:     linalg.
//       CHECK:     scf.for
//       CHECK:       scf.for %{{.+}} = %c0 to %c32 step %c16 {
//       CHECK:         arith.addf %{{.+}}, %{{.+}} : vector<16xf32>
//       CHECK:       arith.addf %{{.+}}, %{{.+}} : vector<8xf32>
//       CHECK:     %[[SUMS:.+]] = memref.alloca() : memref<4xf32>
//       CHECK:     scf.for
//       CHECK:       scf.for %{{.+}} = %c0 to %c32 step %c16 iter_args(%{{.+}} = %{{.+}}) -> (vector<1xf32>) {
//       CHECK:         %[[SQ:.+]] = arith.mulf %[[V:.+]], %[[V]] : vector<16xf32>
//       CHECK:         vector.reduction <add>, %[[SQ]], %{{.+}} : vector<16xf32> into f32
//       CHECK:       vector.reduction <add>, %{{.+}}, %{{.+}} : vector<8xf32> into f32
//       CHECK:     math.rsqrt %{{.+}} : vector<16xf32>
//       CHECK:     scf.for
//       CHECK:       scf.for %{{.+}} = %c0 to %c32 step %c16 {
//       CHECK:         arith.mulf %{{.+}}, %{{.+}} : vector<16xf32>
//       CHECK:       arith.mulf %{{.+}}, %{{.+}} : vector<8xf32>
func.func @rms_norm(%x: tensor<?x40xf32>, %r: tensor<?x40xf32>) -> (tensor<?x40xf32>, tensor<?x40xf32>) {
  %w = llmserve.weight "w" : tensor<40xf32>
  %y, %s = llmserve.rms_norm %x, %w residual %r epsilon 1.0e-05 : tensor<?x40xf32>, tensor<40xf32>, tensor<?x40xf32>
  return %y, %s : tensor<?x40xf32>, tensor<?x40xf32>
}

// -----

// layer_norm with D = 48 (no remainder): two row sums (of s, then of
// (s - mean)²), then (s - mean) · rsqrt · weight + bias.
// CHECK-LABEL: module @kernels
//       CHECK:   func.func @llmserve_d0_layer_norm
//   CHECK-NOT:     linalg.
//   CHECK-NOT:     vector<8xf32>
//       CHECK:     vector.reduction <add>
//       CHECK:     arith.subf
//       CHECK:     vector.reduction <add>
//       CHECK:     math.rsqrt
//       CHECK:     arith.subf
//       CHECK:     arith.addf
func.func @layer_norm(%x: tensor<?x48xf32>) -> tensor<?x48xf32> {
  %w = llmserve.weight "w" : tensor<48xf32>
  %b = llmserve.weight "b" : tensor<48xf32>
  %y = llmserve.layer_norm %x, %w, %b epsilon 1.0e-05 : tensor<?x48xf32>, tensor<48xf32>, tensor<48xf32>
  return %y : tensor<?x48xf32>
}
