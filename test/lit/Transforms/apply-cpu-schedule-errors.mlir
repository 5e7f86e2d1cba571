// RUN: %llmserve-opt %s -llmserve-apply-cpu-schedule -verify-diagnostics -split-input-file

// A generic that the schedule cannot vectorize (a call in its body) fails the
// pass with the transform's error at the op.
func.func private @opaque(f32) -> f32

func.func @kernel(%x: memref<?xf32>, %y: memref<?xf32>) {
  // expected-error @below {{Attempted to vectorize, but failed}}
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                  iterator_types = ["parallel"]}
      ins(%x : memref<?xf32>) outs(%y : memref<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = func.call @opaque(%in) : (f32) -> f32
    linalg.yield %r : f32
  }
  return
}

// -----

// The same for a linear contraction: its register tiles cannot be vectorized.
func.func private @opaque(f32) -> f32

func.func @linear(%x: memref<?x32xf32>, %w: memref<?x32x16xf32>, %y: memref<?x?x16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<?x?x16xf32>)
  // expected-error @below {{Attempted to vectorize, but failed}}
  linalg.generic {indexing_maps = [affine_map<(m, p, l, k) -> (m, k)>,
                                   affine_map<(m, p, l, k) -> (p, k, l)>,
                                   affine_map<(m, p, l, k) -> (m, p, l)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x32xf32>, memref<?x32x16xf32>) outs(%y : memref<?x?x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %product = func.call @opaque(%a) : (f32) -> f32
    %sum = arith.addf %acc, %product : f32
    linalg.yield %sum : f32
  }
  return
}
