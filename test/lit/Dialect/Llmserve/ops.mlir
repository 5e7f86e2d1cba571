// Every llmserve op, in every optional form, prints in a form that parses
// back to the same IR (custom, generic and bytecode forms).
// RUN: %llmserve-opt %s -split-input-file -verify-roundtrip | %llmserve-opt -split-input-file | FileCheck %s
// RUN: %llmserve-opt %s -split-input-file -mlir-print-op-generic | %llmserve-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func @weight
func.func @weight() -> (tensor<128x64xf32>, tensor<192x64xf16>, tensor<64xbf16>, tensor<64x64xf16>, tensor<2x8xf32>) {
  // CHECK: llmserve.weight "model.layers.0.mlp.up_proj.weight" : tensor<128x64xf32>
  %w = llmserve.weight "model.layers.0.mlp.up_proj.weight" : tensor<128x64xf32>
  // CHECK: llmserve.weight "h.0.attn.c_attn.weight" transposed : tensor<192x64xf16>
  %c = llmserve.weight "h.0.attn.c_attn.weight" transposed : tensor<192x64xf16>
  // CHECK: llmserve.weight "model.norm.weight" : tensor<64xbf16>
  %n = llmserve.weight "model.norm.weight" : tensor<64xbf16>
  // CHECK: llmserve.weight "h.0.attn.c_attn.weight" transposed rows [64, 128] : tensor<64x64xf16>
  %k = llmserve.weight "h.0.attn.c_attn.weight" transposed rows [64, 128] : tensor<64x64xf16>
  // CHECK: llmserve.weight "w" rows [2, 4] : tensor<2x8xf32>
  %r = llmserve.weight "w" rows [2, 4] : tensor<2x8xf32>
  return %w, %c, %n, %k, %r : tensor<128x64xf32>, tensor<192x64xf16>, tensor<64xbf16>, tensor<64x64xf16>, tensor<2x8xf32>
}

// -----

// CHECK-LABEL: func @quantized_weight
func.func @quantized_weight() -> (tensor<128x64xi8>, tensor<128xf32>, tensor<64x64xi8>) {
  // CHECK: llmserve.weight "lm_head.weight" quantized int8_channel values : tensor<128x64xi8>
  %v = llmserve.weight "lm_head.weight" quantized int8_channel values : tensor<128x64xi8>
  // CHECK: llmserve.weight "lm_head.weight" quantized int8_channel scales : tensor<128xf32>
  %s = llmserve.weight "lm_head.weight" quantized int8_channel scales : tensor<128xf32>
  // CHECK: llmserve.weight "c_attn" transposed rows [0, 64] quantized int8_channel values : tensor<64x64xi8>
  %q = llmserve.weight "c_attn" transposed rows [0, 64] quantized int8_channel values : tensor<64x64xi8>
  return %v, %s, %q : tensor<128x64xi8>, tensor<128xf32>, tensor<64x64xi8>
}

// -----

// CHECK-LABEL: func @gptq_linear
func.func @gptq_linear(%x: tensor<?x256xf32>) -> tensor<?x16xf32> {
  // CHECK: llmserve.weight "q_proj" rows [16, 32] quantized int4_group128 values from gptq : tensor<16x256xi4>
  %v = llmserve.weight "q_proj" rows [16, 32] quantized int4_group128 values from gptq : tensor<16x256xi4>
  // CHECK: llmserve.weight "q_proj" rows [16, 32] quantized int4_group128 scales from gptq : tensor<16x2xf32>
  %s = llmserve.weight "q_proj" rows [16, 32] quantized int4_group128 scales from gptq : tensor<16x2xf32>
  // CHECK: llmserve.weight "q_proj" rows [16, 32] quantized int4_group128 zeros from gptq : tensor<16x2xi8>
  %z = llmserve.weight "q_proj" rows [16, 32] quantized int4_group128 zeros from gptq : tensor<16x2xi8>
  // CHECK: llmserve.linear %{{.*}}, %{{.*}} scales %{{.*}} zeros %{{.*}} : tensor<?x256xf32>, tensor<16x256xi4> -> tensor<?x16xf32>
  %y = llmserve.linear %x, %v scales %s zeros %z : tensor<?x256xf32>, tensor<16x256xi4> -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

// An act-order GPTQ checkpoint's linear, dequantized at load, and quantized
// again by int8_channel.
// CHECK-LABEL: func @gptq_dequantized
func.func @gptq_dequantized() -> (tensor<16x256xf32>, tensor<16x256xi8>) {
  // CHECK: llmserve.weight "q_proj" from gptq : tensor<16x256xf32>
  %w = llmserve.weight "q_proj" from gptq : tensor<16x256xf32>
  // CHECK: llmserve.weight "k_proj" quantized int8_channel values from gptq : tensor<16x256xi8>
  %v = llmserve.weight "k_proj" quantized int8_channel values from gptq : tensor<16x256xi8>
  return %w, %v : tensor<16x256xf32>, tensor<16x256xi8>
}

// -----

// An FP8 checkpoint's weights, dequantized at load: read as floats, stacked,
// or quantized again; a compressed-tensors checkpoint's FP8 or int8 weight,
// dequantized too, and the zero points of its 4-bit one.
// CHECK-LABEL: func @fp8_checkpoint_weights
func.func @fp8_checkpoint_weights() -> (tensor<64x256xf32>, tensor<4x64x256xbf16>, tensor<64x256xi8>) {
  // CHECK: llmserve.weight "down_proj.weight" from fp8_block128 : tensor<64x256xf32>
  %w = llmserve.weight "down_proj.weight" from fp8_block128 : tensor<64x256xf32>
  // CHECK: llmserve.weight "experts.{}.up_proj.weight" stacked 4 from fp8_block128 : tensor<4x64x256xbf16>
  %e = llmserve.weight "experts.{}.up_proj.weight" stacked 4 from fp8_block128 : tensor<4x64x256xbf16>
  // CHECK: llmserve.weight "q_proj.weight" quantized int8_channel values from fp8_block128 : tensor<64x256xi8>
  %q = llmserve.weight "q_proj.weight" quantized int8_channel values from fp8_block128 : tensor<64x256xi8>
  // CHECK: llmserve.weight "o_proj.weight" from compressed_tensors : tensor<64x256xf32>
  %c = llmserve.weight "o_proj.weight" from compressed_tensors : tensor<64x256xf32>
  // CHECK: llmserve.weight "gate_proj" quantized int4_group128 zeros from compressed_tensors_int4 : tensor<64x2xi8>
  %z = llmserve.weight "gate_proj" quantized int4_group128 zeros from compressed_tensors_int4 : tensor<64x2xi8>
  return %w, %e, %q : tensor<64x256xf32>, tensor<4x64x256xbf16>, tensor<64x256xi8>
}

// -----

// An FP8 checkpoint's codes and block scales as stored, rows [128, 300) of
// the tensor (blocks 1 and 2), and the linear that reads them.
// CHECK-LABEL: func @fp8_weight_as_stored
func.func @fp8_weight_as_stored(%x: tensor<?x256xbf16>) -> tensor<?x172xbf16> {
  // CHECK: llmserve.weight "o_proj.weight" rows [128, 300] quantized fp8_block128 values from fp8_block128 : tensor<172x256xf8E4M3FN>
  %v = llmserve.weight "o_proj.weight" rows [128, 300] quantized fp8_block128 values from fp8_block128 : tensor<172x256xf8E4M3FN>
  // CHECK: llmserve.weight "o_proj.weight" rows [128, 300] quantized fp8_block128 scales from fp8_block128 : tensor<2x2xf32>
  %s = llmserve.weight "o_proj.weight" rows [128, 300] quantized fp8_block128 scales from fp8_block128 : tensor<2x2xf32>
  // CHECK: llmserve.linear %{{.*}}, %{{.*}} scales %{{.*}} : tensor<?x256xbf16>, tensor<172x256xf8E4M3FN> -> tensor<?x172xbf16>
  %y = llmserve.linear %x, %v scales %s : tensor<?x256xbf16>, tensor<172x256xf8E4M3FN> -> tensor<?x172xbf16>
  return %y : tensor<?x172xbf16>
}

// x quantized to FP8 per row and group of 128 columns (K = 320: the last
// group has 64), and a W8A8 linear of those codes with a bias of its
// result's type.
// CHECK-LABEL: func @fp8_activations
func.func @fp8_activations(%x: tensor<?x320xbf16>, %w: tensor<200x320xf8E4M3FN>, %s: tensor<2x3xf32>, %b: tensor<200xbf16>) -> tensor<?x200xbf16> {
  // CHECK: %[[C:.*]], %[[S:.*]] = llmserve.quantize_fp8 %{{.*}} : tensor<?x320xbf16> -> tensor<?x320xf8E4M3FN>
  %c, %cs = llmserve.quantize_fp8 %x : tensor<?x320xbf16> -> tensor<?x320xf8E4M3FN>
  // CHECK: llmserve.linear %[[C]] input_scales %[[S]], %{{.*}} scales %{{.*}} bias %{{.*}} : tensor<?x320xf8E4M3FN>, tensor<200x320xf8E4M3FN>, tensor<200xbf16> -> tensor<?x200xbf16>
  %y = llmserve.linear %c input_scales %cs, %w scales %s bias %b : tensor<?x320xf8E4M3FN>, tensor<200x320xf8E4M3FN>, tensor<200xbf16> -> tensor<?x200xbf16>
  return %y : tensor<?x200xbf16>
}

// -----

// CHECK-LABEL: func @int4_weight
func.func @int4_weight() -> (tensor<128x256xi4>, tensor<128x2xf32>) {
  // CHECK: llmserve.weight "w" quantized int4_group128 values : tensor<128x256xi4>
  %v = llmserve.weight "w" quantized int4_group128 values : tensor<128x256xi4>
  // CHECK: llmserve.weight "w" quantized int4_group128 scales : tensor<128x2xf32>
  %s = llmserve.weight "w" quantized int4_group128 scales : tensor<128x2xf32>
  return %v, %s : tensor<128x256xi4>, tensor<128x2xf32>
}

// -----

// CHECK-LABEL: func @embedding
// CHECK-SAME: (%[[TABLE:.*]]: tensor<1000x64xf16>, %[[IDS:.*]]: tensor<?xi32>, %[[IDS4:.*]]: tensor<4xi32>)
func.func @embedding(%table: tensor<1000x64xf16>, %ids: tensor<?xi32>, %ids4: tensor<4xi32>)
    -> (tensor<?x64xf16>, tensor<4x?xf16>) {
  // CHECK: llmserve.embedding %[[TABLE]], %[[IDS]] : tensor<1000x64xf16>, tensor<?xi32> -> tensor<?x64xf16>
  %x = llmserve.embedding %table, %ids : tensor<1000x64xf16>, tensor<?xi32> -> tensor<?x64xf16>
  // CHECK: llmserve.embedding %[[TABLE]], %[[IDS4]] : tensor<1000x64xf16>, tensor<4xi32> -> tensor<4x?xf16>
  %y = llmserve.embedding %table, %ids4 : tensor<1000x64xf16>, tensor<4xi32> -> tensor<4x?xf16>
  // CHECK: llmserve.embedding %[[TABLE]], %[[IDS]] scale 8.000000e+00 : tensor<1000x64xf16>, tensor<?xi32> -> tensor<?x64xf16>
  %z = llmserve.embedding %table, %ids scale 8.0 : tensor<1000x64xf16>, tensor<?xi32> -> tensor<?x64xf16>
  return %x, %y : tensor<?x64xf16>, tensor<4x?xf16>
}

// -----

// CHECK-LABEL: func @rms_norm
// CHECK-SAME: (%[[X:.*]]: tensor<?x64xf32>, %[[W:.*]]: tensor<64xf32>, %[[R:.*]]: tensor<?x64xf32>)
func.func @rms_norm(%x: tensor<?x64xf32>, %w: tensor<64xf32>, %r: tensor<?x64xf32>)
    -> (tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) {
  // CHECK: llmserve.rms_norm %[[X]], %[[W]] epsilon 9.99999997E-7 : tensor<?x64xf32>, tensor<64xf32>
  %y = llmserve.rms_norm %x, %w epsilon 1.0e-06 : tensor<?x64xf32>, tensor<64xf32>
  // CHECK: llmserve.rms_norm %[[X]], %[[W]] residual %[[R]] epsilon 0.000000e+00 : tensor<?x64xf32>, tensor<64xf32>, tensor<?x64xf32>
  %z, %s = llmserve.rms_norm %x, %w residual %r epsilon 0.0 : tensor<?x64xf32>, tensor<64xf32>, tensor<?x64xf32>
  return %y, %z, %s : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// Per-head: each row is 4 groups of 16 with the same weight.
// CHECK-LABEL: func @rms_norm_grouped
func.func @rms_norm_grouped(%q: tensor<?x64xf32>, %w: tensor<16xf32>) -> tensor<?x64xf32> {
  // CHECK: llmserve.rms_norm %{{.*}}, %{{.*}} epsilon 9.99999997E-7 : tensor<?x64xf32>, tensor<16xf32>
  %y = llmserve.rms_norm %q, %w epsilon 1.0e-06 : tensor<?x64xf32>, tensor<16xf32>
  // Gemma's (1 + weight); the default offset 0 is not printed.
  // CHECK: llmserve.rms_norm %{{.*}}, %{{.*}} epsilon 9.99999997E-7 weight_offset 1.000000e+00 : tensor<?x64xf32>, tensor<16xf32>
  %g = llmserve.rms_norm %q, %w epsilon 1.0e-06 weight_offset 1.0 : tensor<?x64xf32>, tensor<16xf32>
  // CHECK: llmserve.rms_norm %{{.*}}, %{{.*}} epsilon 9.99999997E-7 : tensor<?x64xf32>, tensor<16xf32>
  %z = llmserve.rms_norm %q, %w epsilon 1.0e-06 weight_offset 0.0 : tensor<?x64xf32>, tensor<16xf32>
  return %y : tensor<?x64xf32>
}

// -----

// CHECK-LABEL: func @layer_norm
// CHECK-SAME: (%[[X:.*]]: tensor<?x?xbf16>, %[[W:.*]]: tensor<64xbf16>, %[[B:.*]]: tensor<?xbf16>, %[[R:.*]]: tensor<?x?xbf16>)
func.func @layer_norm(%x: tensor<?x?xbf16>, %w: tensor<64xbf16>, %b: tensor<?xbf16>, %r: tensor<?x?xbf16>)
    -> (tensor<?x?xbf16>, tensor<?x?xbf16>, tensor<?x?xbf16>) {
  // CHECK: llmserve.layer_norm %[[X]], %[[W]], %[[B]] epsilon 9.99999974E-6 : tensor<?x?xbf16>, tensor<64xbf16>, tensor<?xbf16>
  %y = llmserve.layer_norm %x, %w, %b epsilon 1.0e-05 : tensor<?x?xbf16>, tensor<64xbf16>, tensor<?xbf16>
  // CHECK: llmserve.layer_norm %[[X]], %[[W]], %[[B]] residual %[[R]] epsilon 9.99999974E-6 : tensor<?x?xbf16>, tensor<64xbf16>, tensor<?xbf16>, tensor<?x?xbf16>
  %z, %s = llmserve.layer_norm %x, %w, %b residual %r epsilon 1.0e-05 : tensor<?x?xbf16>, tensor<64xbf16>, tensor<?xbf16>, tensor<?x?xbf16>
  return %y, %z, %s : tensor<?x?xbf16>, tensor<?x?xbf16>, tensor<?x?xbf16>
}

// -----

// CHECK-LABEL: func @linear
// CHECK-SAME: (%[[X:.*]]: tensor<?x64xf32>, %[[W:.*]]: tensor<128x64xf32>, %[[B:.*]]: tensor<128xf32>)
func.func @linear(%x: tensor<?x64xf32>, %w: tensor<128x64xf32>, %b: tensor<128xf32>)
    -> (tensor<?x128xf32>, tensor<?x?xf32>) {
  // CHECK: llmserve.linear %[[X]], %[[W]] : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  %y = llmserve.linear %x, %w : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  // CHECK: llmserve.linear %[[X]], %[[W]] bias %[[B]] : tensor<?x64xf32>, tensor<128x64xf32>, tensor<128xf32> -> tensor<?x?xf32>
  %z = llmserve.linear %x, %w bias %b : tensor<?x64xf32>, tensor<128x64xf32>, tensor<128xf32> -> tensor<?x?xf32>
  return %y, %z : tensor<?x128xf32>, tensor<?x?xf32>
}

// -----

// A narrow linear may compute f32 (the logits of a bf16 model).
// CHECK-LABEL: func @linear_widened_weight
func.func @linear_widened_weight(%x: tensor<?x64xf32>, %w: tensor<128x64xbf16>) -> tensor<?x128xf32> {
  // CHECK: llmserve.linear %{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<128x64xbf16> -> tensor<?x128xf32>
  %y = llmserve.linear %x, %w : tensor<?x64xf32>, tensor<128x64xbf16> -> tensor<?x128xf32>
  return %y : tensor<?x128xf32>
}

// -----

// CHECK-LABEL: func @linear_f32_result
func.func @linear_f32_result(%x: tensor<?x64xbf16>, %w: tensor<128x64xbf16>) -> tensor<?x128xf32> {
  // CHECK: llmserve.linear %{{.*}}, %{{.*}} : tensor<?x64xbf16>, tensor<128x64xbf16> -> tensor<?x128xf32>
  %y = llmserve.linear %x, %w : tensor<?x64xbf16>, tensor<128x64xbf16> -> tensor<?x128xf32>
  return %y : tensor<?x128xf32>
}

// -----

// An i8 weight with its per-row scales; the scales' type follows the weight's.
// CHECK-LABEL: func @linear_quantized
// CHECK-SAME: (%[[X:.*]]: tensor<?x64xf32>, %[[V:.*]]: tensor<128x64xi8>, %[[S:.*]]: tensor<128xf32>, %[[B:.*]]: tensor<128xf32>)
func.func @linear_quantized(%x: tensor<?x64xf32>, %v: tensor<128x64xi8>, %s: tensor<128xf32>, %b: tensor<128xf32>)
    -> (tensor<?x128xf32>, tensor<?x128xf32>) {
  // CHECK: llmserve.linear %[[X]], %[[V]] scales %[[S]] : tensor<?x64xf32>, tensor<128x64xi8> -> tensor<?x128xf32>
  %y = llmserve.linear %x, %v scales %s : tensor<?x64xf32>, tensor<128x64xi8> -> tensor<?x128xf32>
  // CHECK: llmserve.linear %[[X]], %[[V]] scales %[[S]] bias %[[B]] : tensor<?x64xf32>, tensor<128x64xi8>, tensor<128xf32> -> tensor<?x128xf32>
  %z = llmserve.linear %x, %v scales %s bias %b : tensor<?x64xf32>, tensor<128x64xi8>, tensor<128xf32> -> tensor<?x128xf32>
  return %y, %z : tensor<?x128xf32>, tensor<?x128xf32>
}

// -----

// An i4 weight with scales per row and group of 128 columns.
// CHECK-LABEL: func @linear_int4
func.func @linear_int4(%x: tensor<?x256xf32>, %v: tensor<128x256xi4>, %s: tensor<128x2xf32>) -> tensor<?x128xf32> {
  // CHECK: llmserve.linear %{{.*}}, %{{.*}} scales %{{.*}} : tensor<?x256xf32>, tensor<128x256xi4> -> tensor<?x128xf32>
  %y = llmserve.linear %x, %v scales %s : tensor<?x256xf32>, tensor<128x256xi4> -> tensor<?x128xf32>
  return %y : tensor<?x128xf32>
}

// -----

// CHECK-LABEL: func @rope
// CHECK-SAME: (%[[X:.*]]: tensor<?x256xf16>, %[[P:.*]]: tensor<?xi32>, %[[C:.*]]: tensor<?xi32>, %[[Q:.*]]: tensor<?xi32>)
func.func @rope(%x: tensor<?x256xf16>, %pos: tensor<?xi32>, %cl: tensor<?xi32>, %qs: tensor<?xi32>)
    -> (tensor<?x256xf16>, tensor<?x256xf16>, tensor<?x256xf16>, tensor<?x256xf16>, tensor<?x256xf16>) {
  // CHECK: llmserve.rope %[[X]], %[[P]] style neox head_dim 64 rotary_dim 64 theta 1.000000e+04 : tensor<?x256xf16>, tensor<?xi32>
  %a = llmserve.rope %x, %pos style neox head_dim 64 rotary_dim 64 theta 1.0e4 : tensor<?x256xf16>, tensor<?xi32>
  // The default scaling is not printed.
  // CHECK: llmserve.rope %[[X]], %[[P]] style gptj head_dim 64 rotary_dim 32 theta 1.000000e+04 : tensor<?x256xf16>, tensor<?xi32>
  %b = llmserve.rope %x, %pos style gptj head_dim 64 rotary_dim 32 theta 1.0e4 scaling none : tensor<?x256xf16>, tensor<?xi32>
  // CHECK: llmserve.rope %[[X]], %[[P]] style neox head_dim 64 rotary_dim 64 theta 1.000000e+04 scaling linear scaling_factor 2.000000e+00 : tensor<?x256xf16>, tensor<?xi32>
  %c = llmserve.rope %x, %pos style neox head_dim 64 rotary_dim 64 theta 1.0e4 scaling linear scaling_factor 2.0 : tensor<?x256xf16>, tensor<?xi32>
  // CHECK: llmserve.rope %[[X]], %[[P]] style neox head_dim 64 rotary_dim 64 theta 5.000000e+05 scaling llama3 scaling_factor 8.000000e+00 low_freq_factor 1.000000e+00 high_freq_factor 4.000000e+00 original_max_position 8192 : tensor<?x256xf16>, tensor<?xi32>
  %d = llmserve.rope %x, %pos style neox head_dim 64 rotary_dim 64 theta 5.0e5 scaling llama3 scaling_factor 8.0 low_freq_factor 1.0 high_freq_factor 4.0 original_max_position 8192 : tensor<?x256xf16>, tensor<?xi32>
  // Factors print exactly (1.118320672 is the f32 1.1183207).
  // CHECK: llmserve.rope %[[X]], %[[P]] context_len %[[C]] query_start %[[Q]] style neox head_dim 64 rotary_dim 8 theta 1.000000e+04 scaling longrope original_max_position 4096 short_factor dense<1.000000e+00> : tensor<4xf32> long_factor dense<[1.000000e+00, 1.1183207, 4.000000e+00, 4.777000e+01]> : tensor<4xf32> attention_factor 1.1902380714238083 : tensor<?x256xf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %e = llmserve.rope %x, %pos context_len %cl query_start %qs style neox head_dim 64 rotary_dim 8 theta 1.0e4 scaling longrope original_max_position 4096 short_factor dense<1.0> : tensor<4xf32> long_factor dense<[1.0, 1.118320672, 4.0, 47.77]> : tensor<4xf32> attention_factor 1.1902380714238083 : tensor<?x256xf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  return %a, %b, %c, %d, %e : tensor<?x256xf16>, tensor<?x256xf16>, tensor<?x256xf16>, tensor<?x256xf16>, tensor<?x256xf16>
}

// CHECK-LABEL: func @rope_longrope_static
func.func @rope_longrope_static(%x: tensor<5x48xf32>, %pos: tensor<5xi32>, %cl: tensor<2xi32>, %qs: tensor<3xi32>) -> tensor<5x48xf32> {
  // CHECK: llmserve.rope {{.*}} : tensor<5x48xf32>, tensor<5xi32>, tensor<2xi32>, tensor<3xi32>
  %y = llmserve.rope %x, %pos context_len %cl query_start %qs style neox head_dim 16 rotary_dim 4 theta 1.0e4 scaling longrope original_max_position 16 short_factor dense<[1.0, 1.5]> : tensor<2xf32> long_factor dense<[2.0, 8.0]> : tensor<2xf32> attention_factor 1.25 : tensor<5x48xf32>, tensor<5xi32>, tensor<2xi32>, tensor<3xi32>
  return %y : tensor<5x48xf32>
}

// -----

// CHECK-LABEL: func @kv_write
// CHECK-SAME: (%[[K:.*]]: tensor<?x128xf16>, %[[C:.*]]: tensor<?x16x2x64xf16>, %[[S:.*]]: tensor<?xi32>)
func.func @kv_write(%k: tensor<?x128xf16>, %cache: tensor<?x16x2x64xf16>, %slots: tensor<?xi32>)
    -> tensor<?x16x2x64xf16> {
  // CHECK: llmserve.kv_write %[[K]] into %[[C]] at %[[S]] : tensor<?x128xf16>, tensor<?x16x2x64xf16>, tensor<?xi32>
  %c = llmserve.kv_write %k into %cache at %slots : tensor<?x128xf16>, tensor<?x16x2x64xf16>, tensor<?xi32>
  return %c : tensor<?x16x2x64xf16>
}

// -----

// An FP8 cache takes its scale, or one per KV head.
// CHECK-LABEL: func @kv_write_fp8
func.func @kv_write_fp8(%k: tensor<?x128xbf16>, %cache: tensor<?x16x2x64xf8E4M3FN>, %slots: tensor<?xi32>)
    -> tensor<?x16x2x64xf8E4M3FN> {
  // CHECK: llmserve.kv_write %{{.*}} into %{{.*}} at %{{.*}} scale [5.000000e-01] : tensor<?x128xbf16>, tensor<?x16x2x64xf8E4M3FN>, tensor<?xi32>
  %c = llmserve.kv_write %k into %cache at %slots scale [0.5] : tensor<?x128xbf16>, tensor<?x16x2x64xf8E4M3FN>, tensor<?xi32>
  // CHECK: llmserve.kv_write %{{.*}} into %{{.*}} at %{{.*}} scale [5.000000e-01, 1.250000e-01] :
  %c2 = llmserve.kv_write %k into %c at %slots scale [0.5, 0.125] : tensor<?x128xbf16>, tensor<?x16x2x64xf8E4M3FN>, tensor<?xi32>
  return %c2 : tensor<?x16x2x64xf8E4M3FN>
}

// -----

// CHECK-LABEL: func @paged_attention_fp8
func.func @paged_attention_fp8(%q: tensor<?x512xf32>, %kc: tensor<?x16x2x64xf8E4M3FN>, %vc: tensor<?x16x2x64xf8E4M3FN>,
                               %bt: tensor<?x?xi32>, %cl: tensor<?xi32>, %qs: tensor<?xi32>)
    -> (tensor<?x512xf32>, tensor<?x8xf32>) {
  // CHECK: llmserve.paged_attention {{.*}} num_heads 8 scale 1.250000e-01 sliding_window 64 kv_scales [5.000000e-01], [2.500000e-01] : tensor<?x512xf32>, tensor<?x16x2x64xf8E4M3FN>,
  %o, %lse = llmserve.paged_attention %q, %kc, %vc block_table %bt context_len %cl query_start %qs num_heads 8 scale 0.125 sliding_window 64 kv_scales [0.5], [0.25]
      : tensor<?x512xf32>, tensor<?x16x2x64xf8E4M3FN>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  // CHECK: llmserve.paged_attention {{.*}} kv_scales [5.000000e-01, 2.500000e-01], [2.500000e-01, 6.250000e-02] :
  %o2, %lse2 = llmserve.paged_attention %q, %kc, %vc block_table %bt context_len %cl query_start %qs num_heads 8 scale 0.125 kv_scales [0.5, 0.25], [0.25, 0.0625]
      : tensor<?x512xf32>, tensor<?x16x2x64xf8E4M3FN>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return %o, %lse : tensor<?x512xf32>, tensor<?x8xf32>
}

// -----

// CHECK-LABEL: func @paged_attention
// CHECK-SAME: (%[[Q:.*]]: tensor<?x512xf32>, %[[KC:.*]]: tensor<?x16x2x64xf32>, %[[VC:.*]]: tensor<?x16x2x64xf32>, %[[BT:.*]]: tensor<?x?xi32>, %[[CL:.*]]: tensor<?xi32>, %[[QS:.*]]: tensor<?xi32>)
func.func @paged_attention(%q: tensor<?x512xf32>, %kc: tensor<?x16x2x64xf32>, %vc: tensor<?x16x2x64xf32>,
                           %bt: tensor<?x?xi32>, %cl: tensor<?xi32>, %qs: tensor<?xi32>)
    -> (tensor<?x512xf32>, tensor<?x8xf32>, tensor<?x512xf32>, tensor<?x?xf32>) {
  // CHECK: llmserve.paged_attention %[[Q]], %[[KC]], %[[VC]] block_table %[[BT]] context_len %[[CL]] query_start %[[QS]] num_heads 8 scale 1.250000e-01 : tensor<?x512xf32>, tensor<?x16x2x64xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  %o, %lse = llmserve.paged_attention %q, %kc, %vc block_table %bt context_len %cl query_start %qs num_heads 8 scale 0.125
      : tensor<?x512xf32>, tensor<?x16x2x64xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  // CHECK: llmserve.paged_attention %[[Q]], %[[KC]], %[[VC]] block_table %[[BT]] context_len %[[CL]] query_start %[[QS]] num_heads 8 scale 1.250000e-01 sliding_window 4096 : tensor<?x512xf32>, tensor<?x16x2x64xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x?xf32>
  %o2, %lse2 = llmserve.paged_attention %q, %kc, %vc block_table %bt context_len %cl query_start %qs num_heads 8 scale 0.125 sliding_window 4096
      : tensor<?x512xf32>, tensor<?x16x2x64xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x?xf32>
  // CHECK: llmserve.paged_attention {{.*}} scale 1.250000e-01 sliding_window 4096 softcap 5.000000e+01 :
  %o3, %lse3 = llmserve.paged_attention %q, %kc, %vc block_table %bt context_len %cl query_start %qs num_heads 8 scale 0.125 sliding_window 4096 softcap 50.0
      : tensor<?x512xf32>, tensor<?x16x2x64xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x?xf32>
  return %o, %lse, %o2, %lse2 : tensor<?x512xf32>, tensor<?x8xf32>, tensor<?x512xf32>, tensor<?x?xf32>
}

// -----

// Static step sizes: S = 2 sequences, T = 5 tokens.
// CHECK-LABEL: func @paged_attention_static
func.func @paged_attention_static(%q: tensor<5x512xbf16>, %kc: tensor<64x16x8x64xbf16>, %vc: tensor<64x16x8x64xbf16>,
                                  %bt: tensor<2x4xi32>, %cl: tensor<2xi32>, %qs: tensor<3xi32>)
    -> (tensor<5x512xbf16>, tensor<5x8xf32>) {
  // CHECK: llmserve.paged_attention {{.*}} num_heads 8 scale 1.250000e-01 : tensor<5x512xbf16>, tensor<64x16x8x64xbf16>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32> -> tensor<5x8xf32>
  %o, %lse = llmserve.paged_attention %q, %kc, %vc block_table %bt context_len %cl query_start %qs num_heads 8 scale 0.125
      : tensor<5x512xbf16>, tensor<64x16x8x64xbf16>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32> -> tensor<5x8xf32>
  return %o, %lse : tensor<5x512xbf16>, tensor<5x8xf32>
}

// -----

// CHECK-LABEL: func @activations
// CHECK-SAME: (%[[G:.*]]: tensor<?x256xf32>, %[[U:.*]]: tensor<?x256xf32>, %[[X:.*]]: tensor<2x3x4xf16>)
func.func @activations(%gate: tensor<?x256xf32>, %up: tensor<?x256xf32>, %x: tensor<2x3x4xf16>)
    -> (tensor<?x256xf32>, tensor<?x256xf32>, tensor<2x3x4xf16>, tensor<2x3x4xf16>) {
  // CHECK: llmserve.silu_mul %[[G]], %[[U]] : tensor<?x256xf32>
  %h = llmserve.silu_mul %gate, %up : tensor<?x256xf32>
  // CHECK: llmserve.softcap %[[G]] cap 3.000000e+01 : tensor<?x256xf32>
  %sc = llmserve.softcap %gate cap 30.0 : tensor<?x256xf32>
  // CHECK: llmserve.gelu_mul %[[G]], %[[U]] approximation tanh : tensor<?x256xf32>
  %gg = llmserve.gelu_mul %gate, %up approximation tanh : tensor<?x256xf32>
  // CHECK: llmserve.gelu_mul %[[G]], %[[U]] : tensor<?x256xf32>
  %ge = llmserve.gelu_mul %gate, %up approximation none : tensor<?x256xf32>
  // CHECK: llmserve.gelu %[[G]] : tensor<?x256xf32>
  %a = llmserve.gelu %gate : tensor<?x256xf32>
  // The default approximation is not printed.
  // CHECK: llmserve.gelu %[[X]] : tensor<2x3x4xf16>
  %b = llmserve.gelu %x approximation none : tensor<2x3x4xf16>
  // CHECK: llmserve.gelu %[[X]] approximation tanh : tensor<2x3x4xf16>
  %c = llmserve.gelu %x approximation tanh : tensor<2x3x4xf16>
  return %h, %a, %b, %c : tensor<?x256xf32>, tensor<?x256xf32>, tensor<2x3x4xf16>, tensor<2x3x4xf16>
}

// -----

// CHECK-LABEL: func @stacked_weight
func.func @stacked_weight() -> (tensor<8x128x64xf32>, tensor<4x64x32xbf16>) {
  // CHECK: llmserve.weight "model.layers.0.mlp.experts.{}.up_proj.weight" stacked 8 : tensor<8x128x64xf32>
  %e = llmserve.weight "model.layers.0.mlp.experts.{}.up_proj.weight" stacked 8 : tensor<8x128x64xf32>
  // CHECK: llmserve.weight "experts.{}.w" stacked 4 transposed rows [32, 96] : tensor<4x64x32xbf16>
  %t = llmserve.weight "experts.{}.w" stacked 4 transposed rows [32, 96] : tensor<4x64x32xbf16>
  return %e, %t : tensor<8x128x64xf32>, tensor<4x64x32xbf16>
}

// -----

// CHECK-LABEL: func @expert_linear_int8
func.func @expert_linear_int8(%x: tensor<?x64xf32>, %e: tensor<?x2xi32>) -> tensor<?x128xf32> {
  // CHECK: llmserve.weight "e.{}.w" stacked 8 quantized int8_channel values : tensor<8x128x64xi8>
  %v = llmserve.weight "e.{}.w" stacked 8 quantized int8_channel values : tensor<8x128x64xi8>
  // CHECK: llmserve.weight "e.{}.w" stacked 8 quantized int8_channel scales : tensor<8x128xf32>
  %s = llmserve.weight "e.{}.w" stacked 8 quantized int8_channel scales : tensor<8x128xf32>
  // CHECK: llmserve.expert_linear %{{.*}}, %{{.*}} scales %{{.*}} experts %{{.*}} : tensor<?x64xf32>, tensor<8x128x64xi8>, tensor<?x2xi32> -> tensor<?x128xf32>
  %y = llmserve.expert_linear %x, %v scales %s experts %e
      : tensor<?x64xf32>, tensor<8x128x64xi8>, tensor<?x2xi32> -> tensor<?x128xf32>
  return %y : tensor<?x128xf32>
}

// -----

// CHECK-LABEL: func @moe
func.func @moe(%x: tensor<?x64xf32>, %logits: tensor<?x8xf32>, %wg: tensor<8x128x64xf32>,
               %wd: tensor<8x64x128xf32>, %s: tensor<3x4xbf16>)
    -> (tensor<?x64xf32>, tensor<3x1xf32>, tensor<3x1xi32>) {
  // CHECK: llmserve.moe_router %{{.*}} top_k 2 scoring softmax normalized : tensor<?x8xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  %w, %e = llmserve.moe_router %logits top_k 2 scoring softmax normalized
      : tensor<?x8xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  // CHECK: llmserve.moe_router %{{.*}} top_k 1 scoring sigmoid : tensor<3x4xbf16> -> tensor<3x1xf32>, tensor<3x1xi32>
  %w1, %e1 = llmserve.moe_router %s top_k 1 scoring sigmoid
      : tensor<3x4xbf16> -> tensor<3x1xf32>, tensor<3x1xi32>
  // CHECK: llmserve.expert_linear %{{.*}}, %{{.*}} experts %{{.*}} : tensor<?x64xf32>, tensor<8x128x64xf32>, tensor<?x2xi32> -> tensor<?x128xf32>
  %h = llmserve.expert_linear %x, %wg experts %e
      : tensor<?x64xf32>, tensor<8x128x64xf32>, tensor<?x2xi32> -> tensor<?x128xf32>
  // CHECK: llmserve.expert_linear %{{.*}}, %{{.*}} experts %{{.*}} per_slot : tensor<?x128xf32>, tensor<8x64x128xf32>, tensor<?x2xi32> -> tensor<?x64xf32>
  %d = llmserve.expert_linear %h, %wd experts %e per_slot
      : tensor<?x128xf32>, tensor<8x64x128xf32>, tensor<?x2xi32> -> tensor<?x64xf32>
  // CHECK: llmserve.moe_combine %{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<?x2xf32> -> tensor<?x64xf32>
  %y = llmserve.moe_combine %d, %w : tensor<?x64xf32>, tensor<?x2xf32> -> tensor<?x64xf32>
  return %y, %w1, %e1 : tensor<?x64xf32>, tensor<3x1xf32>, tensor<3x1xi32>
}

// -----

// CHECK-LABEL: func @gather_rows
// CHECK-SAME: (%[[H:.*]]: tensor<?x64xf32>, %[[ROWS:.*]]: tensor<?xi32>)
func.func @gather_rows(%h: tensor<?x64xf32>, %rows: tensor<?xi32>) -> tensor<?x64xf32> {
  // CHECK: llmserve.gather_rows %[[H]], %[[ROWS]] : tensor<?x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  %last = llmserve.gather_rows %h, %rows : tensor<?x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  return %last : tensor<?x64xf32>
}

// -----

// CHECK-LABEL: func @sample
// CHECK-SAME: (%[[L:.*]]: tensor<?x32000xf32>, %[[T:.*]]: tensor<?xf32>, %[[P:.*]]: tensor<?xf32>, %[[K:.*]]: tensor<?xi32>, %[[M:.*]]: tensor<?xf32>, %[[SEED:.*]]: tensor<?xi64>, %[[OFF:.*]]: tensor<?xi32>)
func.func @sample(%logits: tensor<?x32000xf32>, %t: tensor<?xf32>, %p: tensor<?xf32>, %k: tensor<?xi32>,
                  %m: tensor<?xf32>, %seed: tensor<?xi64>, %off: tensor<?xi32>) -> tensor<?xi32> {
  // CHECK: llmserve.sample %[[L]] temperature %[[T]] top_p %[[P]] top_k %[[K]] min_p %[[M]] seed %[[SEED]] rng_offset %[[OFF]] : tensor<?x32000xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xf32>, tensor<?xi64>, tensor<?xi32> -> tensor<?xi32>
  %tok = llmserve.sample %logits temperature %t top_p %p top_k %k min_p %m seed %seed rng_offset %off
      : tensor<?x32000xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xf32>, tensor<?xi64>, tensor<?xi32> -> tensor<?xi32>
  return %tok : tensor<?xi32>
}

// -----

// CHECK-LABEL: func @adjust_logits
// CHECK-SAME: (%[[L:.*]]: tensor<?x32000xf32>, %[[PS:.*]]: tensor<?xi32>, %[[PT:.*]]: tensor<?xi32>, %[[PC:.*]]: tensor<?xi32>, %[[PB:.*]]: tensor<?xf32>, %[[PP:.*]]: tensor<?xf32>, %[[FP:.*]]: tensor<?xf32>, %[[RP:.*]]: tensor<?xf32>, %[[MI:.*]]: tensor<?xi32>, %[[MW:.*]]: tensor<?xi32>)
func.func @adjust_logits(%logits: tensor<?x32000xf32>, %ps: tensor<?xi32>, %pt: tensor<?xi32>, %pc: tensor<?xi32>, %pb: tensor<?xf32>,
                         %pp: tensor<?xf32>, %fp: tensor<?xf32>, %rp: tensor<?xf32>, %mi: tensor<?xi32>, %mw: tensor<?xi32>) -> tensor<?x32000xf32> {
  // CHECK: llmserve.adjust_logits %[[L]] entries %[[PS]] tokens %[[PT]] counts %[[PC]] bias %[[PB]] presence %[[PP]] frequency %[[FP]] repetition %[[RP]] mask_index %[[MI]] mask %[[MW]] : tensor<?x32000xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32000xf32>
  %out = llmserve.adjust_logits %logits entries %ps tokens %pt counts %pc bias %pb presence %pp frequency %fp repetition %rp mask_index %mi mask %mw
      : tensor<?x32000xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32000xf32>
  return %out : tensor<?x32000xf32>
}

// -----

// CHECK-LABEL: func @logprobs
// CHECK-SAME: (%[[L:.*]]: tensor<?x32000xf32>, %[[T:.*]]: tensor<?xi32>, %[[N:.*]]: tensor<?xi32>)
func.func @logprobs(%logits: tensor<?x32000xf32>, %tok: tensor<?xi32>, %n: tensor<?xi32>)
    -> (tensor<?xf32>, tensor<?x20xi32>, tensor<?x20xf32>) {
  // CHECK: llmserve.logprobs %[[L]] tokens %[[T]] num %[[N]] : tensor<?x32000xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?xf32>, tensor<?x20xi32>, tensor<?x20xf32>
  %lp, %top, %toplp = llmserve.logprobs %logits tokens %tok num %n
      : tensor<?x32000xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?xf32>, tensor<?x20xi32>, tensor<?x20xf32>
  return %lp, %top, %toplp : tensor<?xf32>, tensor<?x20xi32>, tensor<?x20xf32>
}

// -----

// CHECK-LABEL: func @dispatch_region
// CHECK-SAME: (%[[X:.*]]: tensor<?x64xf32>, %[[WG:.*]]: tensor<128x64xf32>, %[[WU:.*]]: tensor<128x64xf32>)
func.func @dispatch_region(%x: tensor<?x64xf32>, %wg: tensor<128x64xf32>, %wu: tensor<128x64xf32>)
    -> tensor<?x128xf32> {
  // CHECK: %[[H:.*]] = llmserve.dispatch_region(%[[X]], %[[WG]], %[[WU]]) : (tensor<?x64xf32>, tensor<128x64xf32>, tensor<128x64xf32>) -> tensor<?x128xf32> {
  // CHECK-NEXT: ^bb0(%[[IN:.*]]: tensor<?x64xf32>, %[[G:.*]]: tensor<128x64xf32>, %[[U:.*]]: tensor<128x64xf32>):
  // CHECK-NEXT: %[[GATE:.*]] = llmserve.linear %[[IN]], %[[G]]
  // CHECK-NEXT: %[[UP:.*]] = llmserve.linear %[[IN]], %[[U]]
  // CHECK-NEXT: %[[S:.*]] = llmserve.silu_mul %[[GATE]], %[[UP]] : tensor<?x128xf32>
  // CHECK-NEXT: llmserve.yield %[[S]] : tensor<?x128xf32>
  // CHECK-NEXT: }
  %h = llmserve.dispatch_region(%x, %wg, %wu)
      : (tensor<?x64xf32>, tensor<128x64xf32>, tensor<128x64xf32>) -> tensor<?x128xf32> {
  ^bb0(%in: tensor<?x64xf32>, %g: tensor<128x64xf32>, %u: tensor<128x64xf32>):
    %gate = llmserve.linear %in, %g : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
    %up = llmserve.linear %in, %u : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
    %s = llmserve.silu_mul %gate, %up : tensor<?x128xf32>
    llmserve.yield %s : tensor<?x128xf32>
  }
  // CHECK: return %[[H]]
  return %h : tensor<?x128xf32>
}
