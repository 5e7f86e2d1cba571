// RUN: %llmserve-opt %s -llmserve-group-sibling-ropes -split-input-file | FileCheck %s

// Each layer's q and k ropes (one position array for all layers) become one
// dispatch region at q's rope: the positions first, then q and k; the
// second layer's ropes, whose inputs come after the first layer's, form
// their own.
// CHECK-LABEL: func.func @layers
//  CHECK-SAME:     (%[[P:.*]]: tensor<?xi32>, %[[Q0:.*]]: tensor<?x64xbf16>, %[[K0:.*]]: tensor<?x32xbf16>)
//       CHECK:   %[[R0:.*]]:2 = llmserve.dispatch_region(%[[P]], %[[Q0]], %[[K0]]) : (tensor<?xi32>, tensor<?x64xbf16>, tensor<?x32xbf16>) -> (tensor<?x64xbf16>, tensor<?x32xbf16>) {
//  CHECK-NEXT:   ^bb0(%[[POS:.*]]: tensor<?xi32>, %[[Q:.*]]: tensor<?x64xbf16>, %[[K:.*]]: tensor<?x32xbf16>):
//  CHECK-NEXT:     %[[RQ:.*]] = llmserve.rope %[[Q]], %[[POS]] style neox head_dim 16 rotary_dim 16 theta 1.000000e+04 :
//  CHECK-NEXT:     %[[RK:.*]] = llmserve.rope %[[K]], %[[POS]] style neox head_dim 16 rotary_dim 16 theta 1.000000e+04 :
//  CHECK-NEXT:     llmserve.yield %[[RQ]], %[[RK]] :
//  CHECK-NEXT:   }
//  CHECK-NEXT:   %[[Q1:.*]] = llmserve.silu_mul %[[R0]]#0, %[[R0]]#0
//  CHECK-NEXT:   %[[K1:.*]] = llmserve.silu_mul %[[R0]]#1, %[[R0]]#1
//  CHECK-NEXT:   %[[R1:.*]]:2 = llmserve.dispatch_region(%[[P]], %[[Q1]], %[[K1]])
//       CHECK:   return %[[R1]]#0, %[[R1]]#1
func.func @layers(%pos: tensor<?xi32>, %q0: tensor<?x64xbf16>, %k0: tensor<?x32xbf16>) -> (tensor<?x64xbf16>, tensor<?x32xbf16>) {
  %rq0 = llmserve.rope %q0, %pos style neox head_dim 16 rotary_dim 16 theta 1.000000e+04 : tensor<?x64xbf16>, tensor<?xi32>
  %rk0 = llmserve.rope %k0, %pos style neox head_dim 16 rotary_dim 16 theta 1.000000e+04 : tensor<?x32xbf16>, tensor<?xi32>
  %q1 = llmserve.silu_mul %rq0, %rq0 : tensor<?x64xbf16>
  %k1 = llmserve.silu_mul %rk0, %rk0 : tensor<?x32xbf16>
  %rq1 = llmserve.rope %q1, %pos style neox head_dim 16 rotary_dim 16 theta 1.000000e+04 : tensor<?x64xbf16>, tensor<?xi32>
  %rk1 = llmserve.rope %k1, %pos style neox head_dim 16 rotary_dim 16 theta 1.000000e+04 : tensor<?x32xbf16>, tensor<?xi32>
  return %rq1, %rk1 : tensor<?x64xbf16>, tensor<?x32xbf16>
}

// -----

// Left alone: ropes of other attributes (another theta), a rope whose input
// is computed after the first, and LongRoPE ropes, which read the context
// lengths.
// CHECK-LABEL: func.func @kept
//   CHECK-NOT:   llmserve.dispatch_region
func.func @kept(%pos: tensor<?xi32>, %x: tensor<?x64xf32>, %cl: tensor<?xi32>, %qs: tensor<?xi32>) -> (tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) {
  %a = llmserve.rope %x, %pos style neox head_dim 16 rotary_dim 16 theta 1.000000e+04 : tensor<?x64xf32>, tensor<?xi32>
  %b = llmserve.rope %x, %pos style neox head_dim 16 rotary_dim 16 theta 5.000000e+05 : tensor<?x64xf32>, tensor<?xi32>
  %y = llmserve.silu_mul %x, %x : tensor<?x64xf32>
  %c = llmserve.rope %y, %pos style neox head_dim 16 rotary_dim 16 theta 1.000000e+04 : tensor<?x64xf32>, tensor<?xi32>
  %l1 = llmserve.rope %x, %pos context_len %cl query_start %qs style neox head_dim 16 rotary_dim 8 theta 1.000000e+04 scaling longrope original_max_position 32 short_factor dense<1.0> : tensor<4xf32> long_factor dense<2.0> : tensor<4xf32> attention_factor 1.1 : tensor<?x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %l2 = llmserve.rope %y, %pos context_len %cl query_start %qs style neox head_dim 16 rotary_dim 8 theta 1.000000e+04 scaling longrope original_max_position 32 short_factor dense<1.0> : tensor<4xf32> long_factor dense<2.0> : tensor<4xf32> attention_factor 1.1 : tensor<?x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  return %a, %b, %c, %l1, %l2 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>
}
