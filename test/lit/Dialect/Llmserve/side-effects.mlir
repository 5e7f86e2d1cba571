// Which ops the generic cleanups may merge or erase: every op but kv_write is
// pure, so unused ones disappear and identical ones merge; a kv_write stays
// even when its result is unused, because it stands for the cache update.
// RUN: %llmserve-opt %s -cse -canonicalize | FileCheck %s

// CHECK-LABEL: func @weights_merge
// CHECK-COUNT-1: llmserve.weight "w"
// CHECK-NOT: llmserve.weight
func.func @weights_merge() -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %a = llmserve.weight "w" : tensor<4x4xf32>
  %b = llmserve.weight "w" : tensor<4x4xf32>
  return %a, %b : tensor<4x4xf32>, tensor<4x4xf32>
}

// CHECK-LABEL: func @transposed_weight_is_distinct
// CHECK: llmserve.weight "w" :
// CHECK: llmserve.weight "w" transposed :
func.func @transposed_weight_is_distinct() -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %a = llmserve.weight "w" : tensor<4x4xf32>
  %b = llmserve.weight "w" transposed : tensor<4x4xf32>
  return %a, %b : tensor<4x4xf32>, tensor<4x4xf32>
}

// CHECK-LABEL: func @unused_pure_ops_are_erased
// CHECK-NEXT: return
func.func @unused_pure_ops_are_erased(%x: tensor<?x8xf32>, %ids: tensor<?xi32>, %pos: tensor<?xi32>,
                                      %kc: tensor<?x16x2x4xf32>, %bt: tensor<?x?xi32>, %cl: tensor<?xi32>,
                                      %qs: tensor<?xi32>, %t: tensor<?xf32>, %i64: tensor<?xi64>) {
  %w = llmserve.weight "w" : tensor<8x8xf32>
  %n = llmserve.weight "n" : tensor<8xf32>
  %e = llmserve.embedding %w, %ids : tensor<8x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %r, %s = llmserve.rms_norm %x, %n residual %e epsilon 1.0e-06 : tensor<?x8xf32>, tensor<8xf32>, tensor<?x8xf32>
  %l = llmserve.layer_norm %x, %n, %n epsilon 1.0e-05 : tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>
  %y = llmserve.linear %x, %w bias %n : tensor<?x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<?x8xf32>
  %q = llmserve.rope %x, %pos style neox head_dim 4 rotary_dim 4 theta 1.0e4 : tensor<?x8xf32>, tensor<?xi32>
  %o, %lse = llmserve.paged_attention %x, %kc, %kc block_table %bt context_len %cl query_start %qs num_heads 2 scale 0.5
      : tensor<?x8xf32>, tensor<?x16x2x4xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x2xf32>
  %h = llmserve.silu_mul %x, %x : tensor<?x8xf32>
  %g = llmserve.gelu %x approximation tanh : tensor<?x8xf32>
  %rows = llmserve.gather_rows %x, %ids : tensor<?x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %tok = llmserve.sample %x temperature %t top_p %t top_k %ids min_p %t seed %i64 rng_offset %ids
      : tensor<?x8xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xf32>, tensor<?xi64>, tensor<?xi32> -> tensor<?xi32>
  return
}

// CHECK-LABEL: func @kv_write_is_kept
// CHECK: llmserve.kv_write
func.func @kv_write_is_kept(%k: tensor<?x8xf32>, %kc: tensor<?x16x2x4xf32>, %slots: tensor<?xi32>) {
  %c = llmserve.kv_write %k into %kc at %slots : tensor<?x8xf32>, tensor<?x16x2x4xf32>, tensor<?xi32>
  return
}
