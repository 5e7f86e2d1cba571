// RUN: %llmserve-opt %s --pass-pipeline='builtin.module(llmserve-to-gpu-kernels, llmserve-gpu-kernels-to-nvvm)' | FileCheck %s --implicit-check-not=__nv_

// The kernels become NVVM kernels with bare-pointer parameters (one per
// binding) then the i64 push constants; erf is an inline polynomial whose
// fma are LLVM intrinsics, so no libdevice function is called or declared.
// CHECK: gpu.module @kernels
// CHECK:   llvm.func @llmserve_d0_gelu(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: i64)
// CHECK-SAME: attributes {gpu.kernel, gpu.known_block_size = array<i32: 256, 1, 1>, nvvm.kernel, nvvm.maxntid = array<i32: 256, 1, 1>}
// CHECK:     nvvm.read.ptx.sreg.ctaid.x
// CHECK:     llvm.load %{{.*}} : !llvm.ptr -> bf16
// CHECK:     llvm.call_intrinsic "llvm.fma.f32"
// CHECK-NOT: math.
// CHECK:     llvm.store %{{.*}}, %{{.*}} : bf16, !llvm.ptr
func.func @gelu(%x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %y = llmserve.gelu %x : tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}
