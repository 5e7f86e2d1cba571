// RUN: %llmserve-opt %s --pass-pipeline='builtin.module(llmserve-to-linalg,llmserve-to-cpu-kernels,builtin.module(one-shot-bufferize,llmserve-apply-cpu-schedule,canonicalize))' -split-input-file | FileCheck %s

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

// The linear contraction on packed weights: rows in tiles of 8 and panels in
// pairs, each tile a k loop that carries its 16 accumulators in registers
// (loaded from y, which holds the zeros, before the loop and stored after
// it) and per step loads two panel rows of w, broadcasts eight elements of x
// and issues 16 FMAs. The rows and panels left over run one at a time with
// the same per-lane arithmetic. No linalg op is left.
// CHECK-LABEL: module @kernels
//       CHECK:   func.func @llmserve_d0_linear
//   CHECK-NOT:     linalg.
//       CHECK:     scf.for
//       CHECK:       vector.store %{{.+}} : memref<?x3x16xf32>, vector<16xf32>
//       CHECK:     scf.for %{{.+}} step %c8 {
//       CHECK:       scf.for %{{.+}} step %c2 {
//  CHECK-COUNT-16:       vector.load %{{.+}} : memref<?x3x16xf32>, vector<16xf32>
//       CHECK:         scf.for %{{.+}} = %c0 to %c32 step %c1 iter_args({{.+}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
//   CHECK-COUNT-8:         vector.load %{{.+}} : memref<?x32xf32>, vector<1xf32>
//   CHECK-COUNT-2:         vector.load %{{.+}} : memref<3x32x16xf32>, vector<16xf32>
//  CHECK-COUNT-16:         vector.fma
//   CHECK-NEXT:            scf.yield
//  CHECK-COUNT-16:       vector.store %{{.+}} : memref<?x3x16xf32>, vector<16xf32>
//       CHECK:       scf.for %{{.+}} step %c1 {
//       CHECK:         scf.for %{{.+}} iter_args({{.+}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
//   CHECK-COUNT-8:         vector.fma
//   CHECK-NEXT:            scf.yield
//       CHECK:     scf.for %{{.+}} step %c8 {
//       CHECK:       scf.for %{{.+}} step %c1 {
//       CHECK:         scf.for %{{.+}} iter_args({{.+}}) -> (vector<16xf32>, vector<16xf32>) {
//   CHECK-COUNT-2:         vector.fma
//   CHECK-NEXT:            scf.yield
//       CHECK:       scf.for %{{.+}} step %c1 {
//       CHECK:         scf.for %{{.+}} iter_args({{.+}}) -> (vector<16xf32>) {
//       CHECK:           vector.fma
//  CHECK-NEXT:           scf.yield
func.func @linear(%x: tensor<?x32xf32>) -> tensor<?x48xf32> {
  %w = llmserve.weight "w" : tensor<48x32xf32>
  %y = llmserve.linear %x, %w : tensor<?x32xf32>, tensor<48x32xf32> -> tensor<?x48xf32>
  return %y : tensor<?x48xf32>
}
