// RUN: %llmserve-opt %s -llmserve-quantize-weights -split-input-file -verify-diagnostics | FileCheck %s
// RUN: %llmserve-opt %s -llmserve-quantize-weights=experts=false -split-input-file | FileCheck %s --check-prefix=NO-EXPERTS

// Weights only linears read become int8_channel values and scales, with
// their transpose and rows; the linears keep their bias.
// CHECK-LABEL: func.func @linears
//   CHECK-DAG:   %[[V:.*]] = llmserve.weight "up" quantized int8_channel values : tensor<32x16xi8>
//   CHECK-DAG:   %[[S:.*]] = llmserve.weight "up" quantized int8_channel scales : tensor<32xf32>
//   CHECK-DAG:   %[[CV:.*]] = llmserve.weight "c_attn" transposed rows [16, 32] quantized int8_channel values : tensor<16x16xi8>
//   CHECK-DAG:   %[[CS:.*]] = llmserve.weight "c_attn" transposed rows [16, 32] quantized int8_channel scales : tensor<16xf32>
//       CHECK:   llmserve.linear %{{.*}}, %[[V]] scales %[[S]] : tensor<?x16xf32>, tensor<32x16xi8> -> tensor<?x32xf32>
//       CHECK:   llmserve.linear %{{.*}}, %[[V]] scales %[[S]] : tensor<?x16xf32>, tensor<32x16xi8> -> tensor<?x32xf32>
//       CHECK:   llmserve.linear %{{.*}}, %[[CV]] scales %[[CS]] bias %{{.*}} : tensor<?x16xf32>, tensor<16x16xi8>, tensor<16xf32> -> tensor<?x16xf32>
//   CHECK-NOT:   llmserve.weight "up" :
func.func @linears(%x: tensor<?x16xf32>) -> (tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x16xf32>) {
  %w = llmserve.weight "up" : tensor<32x16xf32>
  %c = llmserve.weight "c_attn" transposed rows [16, 32] : tensor<16x16xf32>
  %b = llmserve.weight "c_attn.bias" rows [16, 32] : tensor<16xf32>
  %y = llmserve.linear %x, %w : tensor<?x16xf32>, tensor<32x16xf32> -> tensor<?x32xf32>
  %z = llmserve.linear %x, %w : tensor<?x16xf32>, tensor<32x16xf32> -> tensor<?x32xf32>
  %k = llmserve.linear %x, %c bias %b : tensor<?x16xf32>, tensor<16x16xf32>, tensor<16xf32> -> tensor<?x16xf32>
  return %y, %z, %k : tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x16xf32>
}

// -----

// An embedding table that is also the output head (tied weights): the
// embedding reads the float table and the head its quantized copy. A weight
// that is a linear's input stays float.
// CHECK-LABEL: func.func @tied
//   CHECK-DAG:   %[[E:.*]] = llmserve.weight "emb" : tensor<32x16xf32>
//   CHECK-DAG:   %[[EV:.*]] = llmserve.weight "emb" quantized int8_channel values : tensor<32x16xi8>
//   CHECK-DAG:   %[[ES:.*]] = llmserve.weight "emb" quantized int8_channel scales : tensor<32xf32>
//       CHECK:   llmserve.embedding %[[E]]
//       CHECK:   llmserve.linear %{{.*}}, %[[EV]] scales %[[ES]] : tensor<?x16xf32>, tensor<32x16xi8> -> tensor<?x32xf32>
//       CHECK:   %[[A:.*]] = llmserve.weight "a" : tensor<4x32xf32>
//       CHECK:   llmserve.linear %[[A]], %{{.*}} scales
func.func @tied(%ids: tensor<?xi32>) -> (tensor<?x32xf32>, tensor<4x8xf32>) {
  %e = llmserve.weight "emb" : tensor<32x16xf32>
  %x = llmserve.embedding %e, %ids : tensor<32x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
  %logits = llmserve.linear %x, %e : tensor<?x16xf32>, tensor<32x16xf32> -> tensor<?x32xf32>
  %a = llmserve.weight "a" : tensor<4x32xf32>
  %w = llmserve.weight "w" : tensor<8x32xf32>
  %y = llmserve.linear %a, %w : tensor<4x32xf32>, tensor<8x32xf32> -> tensor<4x8xf32>
  return %logits, %y : tensor<?x32xf32>, tensor<4x8xf32>
}

// -----

// int4_group128: i4 values and scales per row and group of 128 columns; a
// weight of a width that is no multiple of 128, or of rows that are no
// multiple of 8 (GPT-2's 50,257-word head), keeps its float values.
// RUN: %llmserve-opt %s -llmserve-quantize-weights=scheme=int4_group128 -split-input-file | FileCheck %s --check-prefix=INT4
// INT4-LABEL: func.func @int4
//   INT4-DAG:   %[[V:.*]] = llmserve.weight "up" quantized int4_group128 values : tensor<32x256xi4>
//   INT4-DAG:   %[[S:.*]] = llmserve.weight "up" quantized int4_group128 scales : tensor<32x2xf32>
//   INT4-DAG:   %[[D:.*]] = llmserve.weight "down" : tensor<256x32xf32>
//       INT4:   llmserve.linear %{{.*}}, %[[V]] scales %[[S]] : tensor<?x256xf32>, tensor<32x256xi4> -> tensor<?x32xf32>
//       INT4:   llmserve.linear %{{.*}}, %[[D]] : tensor<?x32xf32>, tensor<256x32xf32> -> tensor<?x256xf32>
//       INT4:   %[[H:.*]] = llmserve.weight "head" : tensor<37x256xf32>
//       INT4:   llmserve.linear %{{.*}}, %[[H]] : tensor<?x256xf32>, tensor<37x256xf32> -> tensor<?x37xf32>
func.func @int4(%x: tensor<?x256xf32>) -> (tensor<?x256xf32>, tensor<?x37xf32>) {
  %w = llmserve.weight "up" : tensor<32x256xf32>
  %d = llmserve.weight "down" : tensor<256x32xf32>
  %y = llmserve.linear %x, %w : tensor<?x256xf32>, tensor<32x256xf32> -> tensor<?x32xf32>
  %z = llmserve.linear %y, %d : tensor<?x32xf32>, tensor<256x32xf32> -> tensor<?x256xf32>
  %h = llmserve.weight "head" : tensor<37x256xf32>
  %l = llmserve.linear %z, %h : tensor<?x256xf32>, tensor<37x256xf32> -> tensor<?x37xf32>
  return %z, %l : tensor<?x256xf32>, tensor<?x37xf32>
}

// -----

// A quantized checkpoint's dequantized weights keep where they come from:
// under int4_group128 an act-order GPTQ linear gets its zero points too
// (read as stored where its groups allow), and an FP8 one does not.
// INT4-LABEL: func.func @from_checkpoints
//   INT4-DAG:   %[[V:.*]] = llmserve.weight "q_proj" quantized int4_group128 values from gptq : tensor<32x256xi4>
//   INT4-DAG:   %[[S:.*]] = llmserve.weight "q_proj" quantized int4_group128 scales from gptq : tensor<32x2xf32>
//   INT4-DAG:   %[[Z:.*]] = llmserve.weight "q_proj" quantized int4_group128 zeros from gptq : tensor<32x2xi8>
//   INT4-DAG:   %[[F:.*]] = llmserve.weight "k_proj.weight" quantized int4_group128 values from fp8_block128 : tensor<32x256xi4>
//       INT4:   llmserve.linear %{{.*}}, %[[V]] scales %[[S]] zeros %[[Z]] :
//       INT4:   llmserve.linear %{{.*}}, %[[F]] scales %{{[^ ]*}} :
// CHECK-LABEL: func.func @from_checkpoints
//   CHECK-DAG:   llmserve.weight "q_proj" quantized int8_channel values from gptq : tensor<32x256xi8>
//   CHECK-DAG:   llmserve.weight "k_proj.weight" quantized int8_channel scales from fp8_block128 : tensor<32xf32>
func.func @from_checkpoints(%x: tensor<?x256xf32>) -> (tensor<?x32xf32>, tensor<?x32xf32>) {
  %q = llmserve.weight "q_proj" from gptq : tensor<32x256xf32>
  %k = llmserve.weight "k_proj.weight" from fp8_block128 : tensor<32x256xf32>
  %y = llmserve.linear %x, %q : tensor<?x256xf32>, tensor<32x256xf32> -> tensor<?x32xf32>
  %z = llmserve.linear %x, %k : tensor<?x256xf32>, tensor<32x256xf32> -> tensor<?x32xf32>
  return %y, %z : tensor<?x32xf32>, tensor<?x32xf32>
}

// -----

// An expert_linear's stacked weight becomes int8_channel values [E, N, K]
// and scales [E, N], each expert quantized on its own, under int4_group128
// too (expert_linear has no int4 kernel).
// With experts=false (sm_90, which has no int8 expert kernel) the stacked
// weight stays float while the linears are quantized.
// CHECK-LABEL: func.func @experts
// INT4-LABEL: func.func @experts
// NO-EXPERTS-LABEL: func.func @experts
//       NO-EXPERTS:   %[[W:.*]] = llmserve.weight "e.{}.w" stacked 4 : tensor<4x32x16xf32>
//       NO-EXPERTS:   llmserve.expert_linear %{{.*}}, %[[W]] experts
//       INT4:   llmserve.weight "e.{}.w" stacked 4 quantized int8_channel values : tensor<4x32x16xi8>
//   CHECK-DAG:   %[[V:.*]] = llmserve.weight "e.{}.w" stacked 4 quantized int8_channel values : tensor<4x32x16xi8>
//   CHECK-DAG:   %[[S:.*]] = llmserve.weight "e.{}.w" stacked 4 quantized int8_channel scales : tensor<4x32xf32>
//       CHECK:   llmserve.expert_linear %{{.*}}, %[[V]] scales %[[S]] experts %{{.*}} per_slot : tensor<?x16xf32>, tensor<4x32x16xi8>, tensor<?x2xi32> -> tensor<?x32xf32>
//   CHECK-NOT:   llmserve.weight "e.{}.w" stacked 4 :
func.func @experts(%x: tensor<?x16xf32>, %e: tensor<?x2xi32>) -> tensor<?x32xf32> {
  %w = llmserve.weight "e.{}.w" stacked 4 : tensor<4x32x16xf32>
  %y = llmserve.expert_linear %x, %w experts %e per_slot
      : tensor<?x16xf32>, tensor<4x32x16xf32>, tensor<?x2xi32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
