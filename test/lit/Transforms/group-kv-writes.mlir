// RUN: %llmserve-opt %s -llmserve-group-kv-writes -split-input-file | FileCheck %s

// A layer's key and value writes join the region of its sibling ropes,
// which then yields the rotated queries and the two caches; the rotated
// keys stay inside. The next layer's writes join its own ropes.
// CHECK-LABEL: func.func @layers
//  CHECK-SAME:     (%[[P:.*]]: tensor<?xi32>, %[[S:.*]]: tensor<?xi32>, %[[Q0:.*]]: tensor<?x64xbf16>, %[[K0:.*]]: tensor<?x32xbf16>, %[[V0:.*]]: tensor<?x32xbf16>, %[[KC:.*]]: tensor<?x16x2x16xbf16>, %[[VC:.*]]: tensor<?x16x2x16xbf16>)
//       CHECK:   %[[R0:.*]]:3 = llmserve.dispatch_region(%[[Q0]], %[[P]], %[[K0]], %[[KC]], %[[S]], %[[V0]], %[[VC]]) : (tensor<?x64xbf16>, tensor<?xi32>, tensor<?x32xbf16>, tensor<?x16x2x16xbf16>, tensor<?xi32>, tensor<?x32xbf16>, tensor<?x16x2x16xbf16>) -> (tensor<?x64xbf16>, tensor<?x16x2x16xbf16>, tensor<?x16x2x16xbf16>) {
//  CHECK-NEXT:   ^bb0(%[[Q:.*]]: tensor<?x64xbf16>, %[[POS:.*]]: tensor<?xi32>, %[[K:.*]]: tensor<?x32xbf16>, %[[KCI:.*]]: tensor<?x16x2x16xbf16>, %[[SL:.*]]: tensor<?xi32>, %[[V:.*]]: tensor<?x32xbf16>, %[[VCI:.*]]: tensor<?x16x2x16xbf16>):
//  CHECK-NEXT:     %[[RQ:.*]] = llmserve.rope %[[Q]], %[[POS]]
//  CHECK-NEXT:     %[[RK:.*]] = llmserve.rope %[[K]], %[[POS]]
//  CHECK-NEXT:     %[[WK:.*]] = llmserve.kv_write %[[RK]] into %[[KCI]] at %[[SL]] :
//  CHECK-NEXT:     %[[WV:.*]] = llmserve.kv_write %[[V]] into %[[VCI]] at %[[SL]] :
//  CHECK-NEXT:     llmserve.yield %[[RQ]], %[[WK]], %[[WV]] :
//  CHECK-NEXT:   }
//  CHECK-NEXT:   %[[Q1:.*]] = llmserve.silu_mul %[[R0]]#0, %[[R0]]#0
//  CHECK-NEXT:   %[[K1:.*]] = llmserve.silu_mul %[[K0]], %[[K0]]
//  CHECK-NEXT:   %[[V1:.*]] = llmserve.silu_mul %[[V0]], %[[V0]]
//  CHECK-NEXT:   %[[R1:.*]]:3 = llmserve.dispatch_region(%[[Q1]], %[[P]], %[[K1]], %[[R0]]#1, %[[S]], %[[V1]], %[[R0]]#2)
//       CHECK:   return %[[R1]]#0, %[[R1]]#1, %[[R1]]#2
func.func @layers(%pos: tensor<?xi32>, %slots: tensor<?xi32>, %q0: tensor<?x64xbf16>, %k0: tensor<?x32xbf16>, %v0: tensor<?x32xbf16>, %kc: tensor<?x16x2x16xbf16>, %vc: tensor<?x16x2x16xbf16>) -> (tensor<?x64xbf16>, tensor<?x16x2x16xbf16>, tensor<?x16x2x16xbf16>) {
  %r0:2 = llmserve.dispatch_region(%pos, %q0, %k0) : (tensor<?xi32>, tensor<?x64xbf16>, tensor<?x32xbf16>) -> (tensor<?x64xbf16>, tensor<?x32xbf16>) {
  ^bb0(%p: tensor<?xi32>, %q: tensor<?x64xbf16>, %k: tensor<?x32xbf16>):
    %a = llmserve.rope %q, %p style neox head_dim 16 rotary_dim 16 theta 1.000000e+04 : tensor<?x64xbf16>, tensor<?xi32>
    %b = llmserve.rope %k, %p style neox head_dim 16 rotary_dim 16 theta 1.000000e+04 : tensor<?x32xbf16>, tensor<?xi32>
    llmserve.yield %a, %b : tensor<?x64xbf16>, tensor<?x32xbf16>
  }
  %kc0 = llmserve.kv_write %r0#1 into %kc at %slots : tensor<?x32xbf16>, tensor<?x16x2x16xbf16>, tensor<?xi32>
  %vc0 = llmserve.kv_write %v0 into %vc at %slots : tensor<?x32xbf16>, tensor<?x16x2x16xbf16>, tensor<?xi32>
  %q1 = llmserve.silu_mul %r0#0, %r0#0 : tensor<?x64xbf16>
  %k1 = llmserve.silu_mul %k0, %k0 : tensor<?x32xbf16>
  %v1 = llmserve.silu_mul %v0, %v0 : tensor<?x32xbf16>
  %r1:2 = llmserve.dispatch_region(%pos, %q1, %k1) : (tensor<?xi32>, tensor<?x64xbf16>, tensor<?x32xbf16>) -> (tensor<?x64xbf16>, tensor<?x32xbf16>) {
  ^bb0(%p: tensor<?xi32>, %q: tensor<?x64xbf16>, %k: tensor<?x32xbf16>):
    %a = llmserve.rope %q, %p style neox head_dim 16 rotary_dim 16 theta 1.000000e+04 : tensor<?x64xbf16>, tensor<?xi32>
    %b = llmserve.rope %k, %p style neox head_dim 16 rotary_dim 16 theta 1.000000e+04 : tensor<?x32xbf16>, tensor<?xi32>
    llmserve.yield %a, %b : tensor<?x64xbf16>, tensor<?x32xbf16>
  }
  %kc1 = llmserve.kv_write %r1#1 into %kc0 at %slots : tensor<?x32xbf16>, tensor<?x16x2x16xbf16>, tensor<?xi32>
  %vc1 = llmserve.kv_write %v1 into %vc0 at %slots : tensor<?x32xbf16>, tensor<?x16x2x16xbf16>, tensor<?xi32>
  return %r1#0, %kc1, %vc1 : tensor<?x64xbf16>, tensor<?x16x2x16xbf16>, tensor<?x16x2x16xbf16>
}

// -----

// A lone rope of the keys (the queries' is LongRoPE, which stays alone)
// takes both writes, FP8 ones with their own scales among them; the rotated
// keys, which another op also reads, are yielded too.
// CHECK-LABEL: func.func @lone_rope
//       CHECK:   llmserve.rope {{.*}} context_len
//       CHECK:   %[[R:.*]]:3 = llmserve.dispatch_region(%{{.*}}) : (tensor<?x32xf32>, tensor<?xi32>, tensor<?x16x2x16xf8E4M3FN>, tensor<?xi32>, tensor<?x32xf32>, tensor<?x16x2x16xf8E4M3FN>) -> (tensor<?x32xf32>, tensor<?x16x2x16xf8E4M3FN>, tensor<?x16x2x16xf8E4M3FN>) {
//       CHECK:     %[[RK:.*]] = llmserve.rope
//  CHECK-NEXT:     %[[WK:.*]] = llmserve.kv_write %[[RK]] into %{{.*}} at %{{.*}} scale [5.000000e-01] :
//  CHECK-NEXT:     %[[WV:.*]] = llmserve.kv_write %{{.*}} into %{{.*}} at %{{.*}} scale [2.500000e-01, 1.250000e-01] :
//  CHECK-NEXT:     llmserve.yield %[[RK]], %[[WK]], %[[WV]] :
//       CHECK:   llmserve.silu_mul %[[R]]#0, %[[R]]#0
func.func @lone_rope(%pos: tensor<?xi32>, %slots: tensor<?xi32>, %cl: tensor<?xi32>, %qs: tensor<?xi32>, %q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %v: tensor<?x32xf32>, %kc: tensor<?x16x2x16xf8E4M3FN>, %vc: tensor<?x16x2x16xf8E4M3FN>) -> (tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x16x2x16xf8E4M3FN>, tensor<?x16x2x16xf8E4M3FN>) {
  %rq = llmserve.rope %q, %pos context_len %cl query_start %qs style neox head_dim 16 rotary_dim 8 theta 1.000000e+04 scaling longrope original_max_position 32 short_factor dense<1.0> : tensor<4xf32> long_factor dense<2.0> : tensor<4xf32> attention_factor 1.1 : tensor<?x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %rk = llmserve.rope %k, %pos style neox head_dim 16 rotary_dim 16 theta 1.000000e+04 : tensor<?x32xf32>, tensor<?xi32>
  %kc1 = llmserve.kv_write %rk into %kc at %slots scale [5.000000e-01] : tensor<?x32xf32>, tensor<?x16x2x16xf8E4M3FN>, tensor<?xi32>
  %vc1 = llmserve.kv_write %v into %vc at %slots scale [2.500000e-01, 1.250000e-01] : tensor<?x32xf32>, tensor<?x16x2x16xf8E4M3FN>, tensor<?xi32>
  %y = llmserve.silu_mul %rk, %rk : tensor<?x32xf32>
  return %rq, %y, %kc1, %vc1 : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x16x2x16xf8E4M3FN>, tensor<?x16x2x16xf8E4M3FN>
}

// -----

// Without a rope (GPT-2), the writes of a layer are one region of their
// own, at the first.
// CHECK-LABEL: func.func @no_rope
//  CHECK-SAME:     (%[[S:.*]]: tensor<?xi32>, %[[K:.*]]: tensor<?x32xf32>, %[[V:.*]]: tensor<?x32xf32>, %[[KC:.*]]: tensor<?x16x2x16xf32>, %[[VC:.*]]: tensor<?x16x2x16xf32>)
//       CHECK:   %[[R:.*]]:2 = llmserve.dispatch_region(%[[K]], %[[KC]], %[[S]], %[[V]], %[[VC]])
//       CHECK:     llmserve.kv_write
//  CHECK-NEXT:     llmserve.kv_write
//  CHECK-NEXT:     llmserve.yield
//       CHECK:   return %[[R]]#0, %[[R]]#1
func.func @no_rope(%slots: tensor<?xi32>, %k: tensor<?x32xf32>, %v: tensor<?x32xf32>, %kc: tensor<?x16x2x16xf32>, %vc: tensor<?x16x2x16xf32>) -> (tensor<?x16x2x16xf32>, tensor<?x16x2x16xf32>) {
  %kc1 = llmserve.kv_write %k into %kc at %slots : tensor<?x32xf32>, tensor<?x16x2x16xf32>, tensor<?xi32>
  %vc1 = llmserve.kv_write %v into %vc at %slots : tensor<?x32xf32>, tensor<?x16x2x16xf32>, tensor<?xi32>
  return %kc1, %vc1 : tensor<?x16x2x16xf32>, tensor<?x16x2x16xf32>
}

// -----

// Left alone: writes of different slot mappings, a write whose input is
// computed after the first, and a lone write of keys that a LongRoPE rope
// computes.
// CHECK-LABEL: func.func @kept
//   CHECK-NOT:   llmserve.dispatch_region
func.func @kept(%pos: tensor<?xi32>, %s1: tensor<?xi32>, %s2: tensor<?xi32>, %cl: tensor<?xi32>, %qs: tensor<?xi32>, %k: tensor<?x32xf32>, %c1: tensor<?x16x2x16xf32>, %c2: tensor<?x16x2x16xf32>, %c3: tensor<?x16x2x16xf32>, %c4: tensor<?x16x2x16xf32>) -> (tensor<?x16x2x16xf32>, tensor<?x16x2x16xf32>, tensor<?x16x2x16xf32>, tensor<?x16x2x16xf32>) {
  %w1 = llmserve.kv_write %k into %c1 at %s1 : tensor<?x32xf32>, tensor<?x16x2x16xf32>, tensor<?xi32>
  %w2 = llmserve.kv_write %k into %c2 at %s2 : tensor<?x32xf32>, tensor<?x16x2x16xf32>, tensor<?xi32>
  %y = llmserve.silu_mul %k, %k : tensor<?x32xf32>
  %w3 = llmserve.kv_write %y into %c3 at %s1 : tensor<?x32xf32>, tensor<?x16x2x16xf32>, tensor<?xi32>
  %l = llmserve.rope %k, %pos context_len %cl query_start %qs style neox head_dim 16 rotary_dim 8 theta 1.000000e+04 scaling longrope original_max_position 32 short_factor dense<1.0> : tensor<4xf32> long_factor dense<2.0> : tensor<4xf32> attention_factor 1.1 : tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %w4 = llmserve.kv_write %l into %c4 at %s2 : tensor<?x32xf32>, tensor<?x16x2x16xf32>, tensor<?xi32>
  return %w1, %w2, %w3, %w4 : tensor<?x16x2x16xf32>, tensor<?x16x2x16xf32>, tensor<?x16x2x16xf32>, tensor<?x16x2x16xf32>
}

// -----

// A write never moves above a reader of its cache, which it updates in
// place. Attention reads both old caches after the rope, so the writes stay
// out of the rope's region; they still join each other.
// CHECK-LABEL: func.func @caches_read_after_the_rope
//       CHECK:   %[[RK:.*]] = llmserve.rope
//  CHECK-NEXT:   llmserve.paged_attention
//  CHECK-NEXT:   %{{.*}}:2 = llmserve.dispatch_region(%[[RK]],
//  CHECK-NEXT:   ^bb0
//  CHECK-NEXT:     llmserve.kv_write
//  CHECK-NEXT:     llmserve.kv_write
//  CHECK-NEXT:     llmserve.yield
func.func @caches_read_after_the_rope(%pos: tensor<?xi32>, %slots: tensor<?xi32>, %q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %v: tensor<?x32xf32>, %kc: tensor<?x16x2x16xf32>, %vc: tensor<?x16x2x16xf32>, %bt: tensor<?x?xi32>, %cl: tensor<?xi32>, %qs: tensor<?xi32>) -> (tensor<?x64xf32>, tensor<?x16x2x16xf32>, tensor<?x16x2x16xf32>) {
  %rk = llmserve.rope %k, %pos style neox head_dim 16 rotary_dim 16 theta 1.000000e+04 : tensor<?x32xf32>, tensor<?xi32>
  %o, %lse = llmserve.paged_attention %q, %kc, %vc block_table %bt context_len %cl query_start %qs num_heads 4 scale 2.500000e-01 : tensor<?x64xf32>, tensor<?x16x2x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4xf32>
  %kc1 = llmserve.kv_write %rk into %kc at %slots : tensor<?x32xf32>, tensor<?x16x2x16xf32>, tensor<?xi32>
  %vc1 = llmserve.kv_write %v into %vc at %slots : tensor<?x32xf32>, tensor<?x16x2x16xf32>, tensor<?xi32>
  return %o, %kc1, %vc1 : tensor<?x64xf32>, tensor<?x16x2x16xf32>, tensor<?x16x2x16xf32>
}

// -----

// Attention reads the old value cache between the writes: the key's write
// joins its rope, and the value's stays alone, after the reader.
// CHECK-LABEL: func.func @value_cache_read_between_the_writes
//       CHECK:   llmserve.dispatch_region
//  CHECK-NEXT:   ^bb0
//  CHECK-NEXT:     llmserve.rope
//  CHECK-NEXT:     llmserve.kv_write
//  CHECK-NEXT:     llmserve.yield
//       CHECK:   llmserve.paged_attention
//  CHECK-NEXT:   llmserve.kv_write
//  CHECK-NEXT:   return
func.func @value_cache_read_between_the_writes(%pos: tensor<?xi32>, %slots: tensor<?xi32>, %q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %v: tensor<?x32xf32>, %kc: tensor<?x16x2x16xf32>, %vc: tensor<?x16x2x16xf32>, %bt: tensor<?x?xi32>, %cl: tensor<?xi32>, %qs: tensor<?xi32>) -> (tensor<?x64xf32>, tensor<?x16x2x16xf32>) {
  %rk = llmserve.rope %k, %pos style neox head_dim 16 rotary_dim 16 theta 1.000000e+04 : tensor<?x32xf32>, tensor<?xi32>
  %kc1 = llmserve.kv_write %rk into %kc at %slots : tensor<?x32xf32>, tensor<?x16x2x16xf32>, tensor<?xi32>
  %o, %lse = llmserve.paged_attention %q, %kc1, %vc block_table %bt context_len %cl query_start %qs num_heads 4 scale 2.500000e-01 : tensor<?x64xf32>, tensor<?x16x2x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4xf32>
  %vc1 = llmserve.kv_write %v into %vc at %slots : tensor<?x32xf32>, tensor<?x16x2x16xf32>, tensor<?xi32>
  return %o, %vc1 : tensor<?x64xf32>, tensor<?x16x2x16xf32>
}
