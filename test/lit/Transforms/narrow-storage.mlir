// RUN: %llmserve-opt %s -llmserve-narrow-storage -split-input-file -verify-diagnostics | FileCheck %s
// RUN: %llmserve-opt %s -llmserve-narrow-storage=dtype=f16 -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=F16

// Weights, KV caches and activations become bf16; contract arrays, lse and
// the logits that sample reads stay f32 (the lm_head linear computes f32
// from bf16 operands).
// CHECK-LABEL: func.func @step
//  CHECK-SAME:   %{{.*}}: tensor<?xi32> {llmserve.contract = "token_ids"}
//  CHECK-SAME:   %{{.*}}: tensor<?xf32> {llmserve.contract = "temperature"}
//  CHECK-SAME:   %{{.*}}: tensor<?x4x2x8xbf16> {llmserve.kv_cache = {layer = 0 : i64, role = "k"}}
//       CHECK:   llmserve.weight "emb" : tensor<32x16xbf16>
//       CHECK:   llmserve.embedding {{.*}} -> tensor<?x16xbf16>
//       CHECK:   llmserve.rms_norm {{.*}} : tensor<?x16xbf16>, tensor<16xbf16>
//       CHECK:   llmserve.kv_write {{.*}} : tensor<?x16xbf16>, tensor<?x4x2x8xbf16>, tensor<?xi32>
//       CHECK:   llmserve.paged_attention {{.*}} : tensor<?x16xbf16>, tensor<?x4x2x8xbf16>, {{.*}} -> tensor<?x2xf32>
//       CHECK:   llmserve.linear {{.*}} : tensor<?x16xbf16>, tensor<32x16xbf16> -> tensor<?x32xf32>
//       CHECK:   llmserve.sample {{.*}} : tensor<?x32xf32>
// F16-LABEL: func.func @step
//       F16:   llmserve.weight "emb" : tensor<32x16xf16>
func.func @step(%ids: tensor<?xi32> {llmserve.contract = "token_ids"},
                %bt: tensor<?x?xi32> {llmserve.contract = "block_table"},
                %cl: tensor<?xi32> {llmserve.contract = "context_len"},
                %qs: tensor<?xi32> {llmserve.contract = "query_start"},
                %slots: tensor<?xi32> {llmserve.contract = "slot_mapping"},
                %t: tensor<?xf32> {llmserve.contract = "temperature"},
                %p: tensor<?xf32> {llmserve.contract = "top_p"},
                %k: tensor<?xi32> {llmserve.contract = "top_k"},
                %m: tensor<?xf32> {llmserve.contract = "min_p"},
                %seed: tensor<?xi64> {llmserve.contract = "seed"},
                %kc: tensor<?x4x2x8xf32> {llmserve.kv_cache = {layer = 0 : i64, role = "k"}})
    -> (tensor<?xi32> {llmserve.contract = "next_tokens"}) {
  %e = llmserve.weight "emb" : tensor<32x16xf32>
  %ln = llmserve.weight "ln" : tensor<16xf32>
  %x = llmserve.embedding %e, %ids : tensor<32x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
  %h = llmserve.rms_norm %x, %ln epsilon 1.0e-05 : tensor<?x16xf32>, tensor<16xf32>
  %kc1 = llmserve.kv_write %h into %kc at %slots : tensor<?x16xf32>, tensor<?x4x2x8xf32>, tensor<?xi32>
  %o, %lse = llmserve.paged_attention %h, %kc1, %kc1 block_table %bt context_len %cl query_start %qs num_heads 2 scale 0.35 : tensor<?x16xf32>, tensor<?x4x2x8xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x2xf32>
  %logits = llmserve.linear %o, %e : tensor<?x16xf32>, tensor<32x16xf32> -> tensor<?x32xf32>
  %s = llmserve.sample %logits temperature %t top_p %p top_k %k min_p %m seed %seed rng_offset %cl : tensor<?x32xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xf32>, tensor<?xi64>, tensor<?xi32> -> tensor<?xi32>
  return %s : tensor<?xi32>
}

// -----

// The logits of the head stay f32 through adjust_logits into sample and
// into logprobs, whose results the function returns.
// CHECK-LABEL: func.func @penalties_and_logprobs
//       CHECK:   llmserve.linear {{.*}} : tensor<?x16xbf16>, tensor<32x16xbf16> -> tensor<?x32xf32>
//       CHECK:   llmserve.adjust_logits {{.*}} : tensor<?x32xf32>, {{.*}} -> tensor<?x32xf32>
//       CHECK:   llmserve.sample {{.*}} : tensor<?x32xf32>
//       CHECK:   llmserve.logprobs {{.*}} : tensor<?x32xf32>
func.func @penalties_and_logprobs(%ids: tensor<?xi32> {llmserve.contract = "token_ids"},
                                  %ps: tensor<?xi32> {llmserve.contract = "penalty_start"},
                                  %pt: tensor<?xi32> {llmserve.contract = "penalty_tokens"},
                                  %pc: tensor<?xi32> {llmserve.contract = "penalty_counts"},
                                  %pb: tensor<?xf32> {llmserve.contract = "logit_bias"},
                                  %pp: tensor<?xf32> {llmserve.contract = "presence_penalty"},
                                  %fp: tensor<?xf32> {llmserve.contract = "frequency_penalty"},
                                  %rp: tensor<?xf32> {llmserve.contract = "repetition_penalty"},
                                  %mi: tensor<?xi32> {llmserve.contract = "mask_index"},
                                  %mw: tensor<?xi32> {llmserve.contract = "token_mask"},
                                  %t: tensor<?xf32> {llmserve.contract = "temperature"},
                                  %k: tensor<?xi32> {llmserve.contract = "top_k"},
                                  %seed: tensor<?xi64> {llmserve.contract = "seed"},
                                  %n: tensor<?xi32> {llmserve.contract = "num_logprobs"})
    -> (tensor<?xi32>, tensor<?xf32>, tensor<?x20xi32>, tensor<?x20xf32>) {
  %e = llmserve.weight "emb" : tensor<32x16xf32>
  %h = llmserve.embedding %e, %ids : tensor<32x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
  %logits = llmserve.linear %h, %e : tensor<?x16xf32>, tensor<32x16xf32> -> tensor<?x32xf32>
  %pen = llmserve.adjust_logits %logits entries %ps tokens %pt counts %pc bias %pb presence %pp frequency %fp repetition %rp mask_index %mi mask %mw
      : tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32xf32>
  %s = llmserve.sample %pen temperature %t top_p %t top_k %k min_p %t seed %seed rng_offset %k : tensor<?x32xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xf32>, tensor<?xi64>, tensor<?xi32> -> tensor<?xi32>
  %lp, %tt, %tl = llmserve.logprobs %logits tokens %s num %n
      : tensor<?x32xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?xf32>, tensor<?x20xi32>, tensor<?x20xf32>
  return %s, %lp, %tt, %tl : tensor<?xi32>, tensor<?xf32>, tensor<?x20xi32>, tensor<?x20xf32>
}

// -----

// Soft-capped logits (Gemma 2): the head's linear computes f32 from narrow
// operands and the softcap stays f32.
// CHECK-LABEL: func.func @softcapped_logits
//       CHECK:   llmserve.linear {{.*}} : tensor<?x16xbf16>, tensor<32x16xbf16> -> tensor<?x32xf32>
//       CHECK:   llmserve.softcap {{.*}} : tensor<?x32xf32>
func.func @softcapped_logits(%ids: tensor<?xi32> {llmserve.contract = "token_ids"})
    -> tensor<?x32xf32> {
  %e = llmserve.weight "emb" : tensor<32x16xf32>
  %h = llmserve.embedding %e, %ids : tensor<32x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
  %logits = llmserve.linear %h, %e : tensor<?x16xf32>, tensor<32x16xf32> -> tensor<?x32xf32>
  %capped = llmserve.softcap %logits cap 3.0e+01 : tensor<?x32xf32>
  return %capped : tensor<?x32xf32>
}

// -----

// An argument that is neither a contract array nor a KV cache keeps the
// caller's type, so the graph cannot be narrowed around it.
// expected-error @+1 {{'func.func' op argument #0 is neither a step-contract array nor a KV cache, so its storage type cannot change (compile with --dtype f32 to keep the types as written)}}
func.func @plain_argument(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %y = llmserve.silu_mul %x, %x : tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

// Only linear computes f32 from narrow operands.
func.func @returned_norm(%ids: tensor<?xi32> {llmserve.contract = "token_ids"}) -> tensor<?x16xf32> {
  %e = llmserve.weight "emb" : tensor<32x16xf32>
  %ln = llmserve.weight "ln" : tensor<16xf32>
  %x = llmserve.embedding %e, %ids : tensor<32x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
  // expected-error @+1 {{'llmserve.rms_norm' op result #0 must stay f32 (it is returned or sampled), and only linear computes f32 from narrow operands}}
  %h = llmserve.rms_norm %x, %ln epsilon 1.0e-05 : tensor<?x16xf32>, tensor<16xf32>
  return %h : tensor<?x16xf32>
}

// -----

// A quantized weight's arrays keep the types its scheme fixes (i8 values,
// f32 scales); the linear reading them takes the narrowed input.
// CHECK-LABEL: func.func @quantized
//       CHECK:   llmserve.weight "w" quantized int8_channel values : tensor<32x16xi8>
//       CHECK:   llmserve.weight "w" quantized int8_channel scales : tensor<32xf32>
//       CHECK:   llmserve.linear {{.*}} : tensor<?x16xbf16>, tensor<32x16xi8> -> tensor<?x32xf32>
func.func @quantized(%ids: tensor<?xi32> {llmserve.contract = "token_ids"}) -> tensor<?x32xf32> {
  %e = llmserve.weight "emb" : tensor<32x16xf32>
  %v = llmserve.weight "w" quantized int8_channel values : tensor<32x16xi8>
  %s = llmserve.weight "w" quantized int8_channel scales : tensor<32xf32>
  %x = llmserve.embedding %e, %ids : tensor<32x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
  %y = llmserve.linear %x, %v scales %s : tensor<?x16xf32>, tensor<32x16xi8> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
