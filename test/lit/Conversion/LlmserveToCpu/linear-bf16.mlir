// RUN: %llmserve-opt %s -llmserve-to-cpu-kernels=bf16=true -split-input-file | FileCheck %s
// RUN: %llmserve-opt %s -llmserve-to-cpu-kernels=bf16=false -split-input-file | FileCheck %s --check-prefix=PORTABLE

// With AVX-512 BF16, a bf16 linear whose K is a multiple of 32 rounds each
// block of 16 rows of x to bf16 into scratch made at the kernel's entry,
// then per 32 values of K multiplies x's with W's by vdpbf16ps into 16 f32
// lanes, prefetching the next column tile's row into L2; the lanes are
// reduced, then the bias added. W stays in the checkpoint's row-major
// layout. Workgroups cover 64 columns.
// CHECK-LABEL: func.func @linear_bf16
//       CHECK:   llmserve.weight "w" : tensor<40x64xbf16>
//       CHECK:   llmserve.dispatch = {grid = ["ceildiv($0,64)", "1", "1"]
//       CHECK: func.func @llmserve_d0_linear
//       CHECK:   %[[XB:.+]] = memref.alloca() : memref<16x64xbf16>
//       CHECK:   %[[X:.+]] = vector.load %{{.+}} : memref<?x64xf32>, vector<16xf32>
//       CHECK:   %[[R:.+]] = arith.truncf %[[X]] : vector<16xf32> to vector<16xbf16>
//       CHECK:   vector.store %[[R]], %[[XB]]
//       CHECK:   vector.load %[[XB]]{{.+}} : memref<16x64xbf16>, vector<32xbf16>
//       CHECK:   %[[W:.+]] = vector.load %{{.+}} : memref<40x64xbf16>, vector<32xbf16>
//       CHECK:   memref.prefetch %{{.+}}[%{{.+}}, %{{.+}}], read, locality<2>, data : memref<40x64xbf16>
//       CHECK:   llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"(%{{.+}}, %{{.+}}, %[[W]]) : (vector<16xf32>, vector<32xbf16>, vector<32xbf16>) -> vector<16xf32>
//       CHECK:   vector.reduction <add>
//       CHECK:   memref.load
//       CHECK:   arith.addf
//       CHECK:   memref.store
//   CHECK-NOT:   arith.extf

// Without AVX-512 BF16 the dot-product kernel widens W to f32 as it reads it.
// PORTABLE-LABEL: func.func @linear_bf16
//       PORTABLE: func.func @llmserve_d0_linear
//   PORTABLE-NOT:   llvm.call_intrinsic
//       PORTABLE:   arith.extf %{{.+}} : vector<16xbf16> to vector<16xf32>
//       PORTABLE:   vector.fma
func.func @linear_bf16(%x: tensor<?x64xf32>) -> tensor<?x40xf32> {
  %w = llmserve.weight "w" : tensor<40x64xbf16>
  %b = llmserve.weight "b" : tensor<40xf32>
  %y = llmserve.linear %x, %w bias %b : tensor<?x64xf32>, tensor<40x64xbf16>, tensor<40xf32> -> tensor<?x40xf32>
  return %y : tensor<?x40xf32>
}

// -----

// K not a multiple of 32: the dot-product kernel, also with AVX-512 BF16.
// CHECK-LABEL: func.func @linear_bf16_ragged
//       CHECK: func.func @llmserve_d0_linear
//   CHECK-NOT:   llvm.call_intrinsic
//       CHECK:   arith.extf %{{.+}} : vector<16xbf16> to vector<16xf32>
func.func @linear_bf16_ragged(%x: tensor<?x48xf32>) -> tensor<?x40xf32> {
  %w = llmserve.weight "w" : tensor<40x48xbf16>
  %y = llmserve.linear %x, %w : tensor<?x48xf32>, tensor<40x48xbf16> -> tensor<?x40xf32>
  return %y : tensor<?x40xf32>
}
