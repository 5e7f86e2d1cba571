// RUN: %llmserve-opt %s -llmserve-approximate-math -split-input-file | FileCheck %s

// exp, log, tanh and erf become inline f32 polynomials (no libm calls).
// CHECK-LABEL: func.func @exp
//   CHECK-NOT:   math.exp
//       CHECK:   math.fma
func.func @exp(%x: f32) -> f32 {
  %y = math.exp %x : f32
  return %y : f32
}

// -----

// CHECK-LABEL: func.func @log_tanh_erf
//   CHECK-NOT:   math.log
//   CHECK-NOT:   math.tanh
//   CHECK-NOT:   math.erf
//       CHECK:   return
func.func @log_tanh_erf(%x: vector<16xf32>) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>) {
  %a = math.log %x : vector<16xf32>
  %b = math.tanh %x : vector<16xf32>
  %c = math.erf %x : vector<16xf32>
  return %a, %b, %c : vector<16xf32>, vector<16xf32>, vector<16xf32>
}

// -----

// Others stay for the LLVM intrinsics (cos, sin) and rsqrt.
// CHECK-LABEL: func.func @untouched
//       CHECK:   math.cos
//       CHECK:   math.rsqrt
func.func @untouched(%x: f32) -> (f32, f32) {
  %a = math.cos %x : f32
  %b = math.rsqrt %x : f32
  return %a, %b : f32, f32
}
