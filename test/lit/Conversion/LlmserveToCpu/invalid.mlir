// RUN: %llmserve-opt %s -llmserve-to-cpu-kernels -split-input-file -verify-diagnostics

// Only elementwise generics (identity maps, every loop parallel) have a CPU
// kernel.
func.func @transposing_generic(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @below {{'linalg.generic' op has no CPU kernel (only elementwise generics with identity maps do)}}
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x8xf32>) outs(%x : tensor<8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<8x8xf32>
  return %y : tensor<8x8xf32>
}

// -----

// silu_mul reaches the CPU kernels as a linalg.generic (llmserve-to-linalg).
func.func @silu_mul_not_in_linalg(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @below {{'llmserve.silu_mul' op has no CPU kernel of its own: llmserve-to-linalg makes it a linalg.generic first}}
  %y = llmserve.silu_mul %x, %x : tensor<8x8xf32>
  return %y : tensor<8x8xf32>
}
