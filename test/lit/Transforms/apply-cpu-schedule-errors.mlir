// RUN: %llmserve-opt %s -llmserve-apply-cpu-schedule -verify-diagnostics

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
