// RUN: %llmserve-opt %s --pass-pipeline='builtin.module(llmserve-to-linalg,llmserve-to-cpu-kernels,builtin.module(one-shot-bufferize,llmserve-apply-cpu-schedule,canonicalize))' | FileCheck %s

// After bufferization the elementwise kernel's generic writes in place into
// the output buffer's slice; the schedule tiles it by 16 elements and
// vectorizes each tile with a mask (the last tile is partial), so the body is
// vector<16xf32> arithmetic between masked reads and a masked write.
// CHECK-LABEL: module @kernels
//       CHECK:   func.func @llmserve_d0_generic
//   CHECK-NOT:     bufferization.
//   CHECK-NOT:     linalg.generic
//       CHECK:     scf.for %[[I:.+]] = %{{.+}} to %[[N:.+]] step %c16
//       CHECK:       %[[SIZE:.+]] = affine.min #{{.+}}(%[[I]])[%[[N]]]
//       CHECK:       %[[MASK:.+]] = vector.create_mask %[[SIZE]] : vector<16xi1>
//       CHECK:       %[[G:.+]] = vector.transfer_read %{{.+}}[%{{.+}}], %{{.+}}, %[[MASK]] {in_bounds = [true]} : memref<?xf32, strided<[1], offset: ?>>, vector<16xf32>
//       CHECK:       %[[U:.+]] = vector.transfer_read %{{.+}}[%{{.+}}], %{{.+}}, %[[MASK]] {in_bounds = [true]} : memref<?xf32, strided<[1], offset: ?>>, vector<16xf32>
//       CHECK:       math.exp %{{.+}} : vector<16xf32>
//       CHECK:       %[[Y:.+]] = arith.mulf %{{.+}}, %[[U]] : vector<16xf32>
//       CHECK:       vector.transfer_write %[[Y]], %{{.+}}[%{{.+}}], %[[MASK]] {in_bounds = [true]} : vector<16xf32>, memref<?xf32, strided<[1], offset: ?>>
func.func @silu_mul(%g: tensor<?x64xf32>, %u: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %y = llmserve.silu_mul %g, %u : tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
