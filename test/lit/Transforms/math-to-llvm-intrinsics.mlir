// RUN: %llmserve-opt %s -llmserve-math-to-llvm-intrinsics | FileCheck %s

// f32 floor, roundeven, fma, absf and sqrt call LLVM intrinsics (one PTX instruction
// each, where convert-gpu-to-nvvm would call libdevice); rsqrt is 1 / sqrt.
// CHECK-LABEL: func.func @f32_math
//       CHECK:   llvm.call_intrinsic "llvm.floor.f32"(%{{.*}}) : (f32) -> f32
//       CHECK:   llvm.call_intrinsic "llvm.roundeven.f32"(%{{.*}}) : (f32) -> f32
//       CHECK:   llvm.call_intrinsic "llvm.fma.f32"(%{{.*}}, %{{.*}}, %{{.*}}) : (f32, f32, f32) -> f32
//       CHECK:   llvm.call_intrinsic "llvm.fabs.f32"(%{{.*}}) : (f32) -> f32
//       CHECK:   llvm.call_intrinsic "llvm.sqrt.f32"(%{{.*}}) : (f32) -> f32
//       CHECK:   %[[S:.*]] = llvm.call_intrinsic "llvm.sqrt.f32"(%{{.*}}) : (f32) -> f32
//       CHECK:   arith.divf %{{.*}}, %[[S]] : f32
//   CHECK-NOT:   math.
func.func @f32_math(%x: f32) -> (f32, f32, f32, f32, f32, f32) {
  %a = math.floor %x : f32
  %r = math.roundeven %x : f32
  %b = math.fma %x, %x, %x : f32
  %c = math.absf %x : f32
  %d = math.sqrt %x : f32
  %e = math.rsqrt %x : f32
  return %a, %r, %b, %c, %d, %e : f32, f32, f32, f32, f32, f32
}

// Other element types are left alone.
// CHECK-LABEL: func.func @f64_math
//       CHECK:   math.floor %{{.*}} : f64
func.func @f64_math(%x: f64) -> f64 {
  %a = math.floor %x : f64
  return %a : f64
}
