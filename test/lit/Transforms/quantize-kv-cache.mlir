// RUN: %llmserve-opt %s -llmserve-quantize-kv-cache -split-input-file -verify-diagnostics | FileCheck %s

// Every KV-cache argument becomes f8E4M3FN; kv_write stores into it with a
// scale of 1 and paged_attention reads it with the same scales. Contract
// arrays and activations keep their types.
// CHECK-LABEL: func.func @step
//  CHECK-SAME:   %{{.*}}: tensor<?xi32> {llmserve.contract = "slot_mapping"}
//  CHECK-SAME:   %{{.*}}: tensor<?x4x2x8xf8E4M3FN> {llmserve.kv_cache = {layer = 0 : i64, role = "k"}}
//  CHECK-SAME:   %{{.*}}: tensor<?x4x2x8xf8E4M3FN> {llmserve.kv_cache = {layer = 0 : i64, role = "v"}}
//  CHECK-SAME:   -> tensor<?x16xbf16>
//       CHECK:   llmserve.kv_write {{.*}} scale [1.000000e+00] : tensor<?x16xbf16>, tensor<?x4x2x8xf8E4M3FN>, tensor<?xi32>
//       CHECK:   llmserve.kv_write {{.*}} scale [1.000000e+00] : tensor<?x16xbf16>, tensor<?x4x2x8xf8E4M3FN>, tensor<?xi32>
//       CHECK:   llmserve.paged_attention {{.*}} kv_scales [1.000000e+00], [1.000000e+00] : tensor<?x16xbf16>, tensor<?x4x2x8xf8E4M3FN>,
func.func @step(%bt: tensor<?x?xi32> {llmserve.contract = "block_table"},
                %cl: tensor<?xi32> {llmserve.contract = "context_len"},
                %qs: tensor<?xi32> {llmserve.contract = "query_start"},
                %slots: tensor<?xi32> {llmserve.contract = "slot_mapping"},
                %kc: tensor<?x4x2x8xbf16> {llmserve.kv_cache = {layer = 0 : i64, role = "k"}},
                %vc: tensor<?x4x2x8xbf16> {llmserve.kv_cache = {layer = 0 : i64, role = "v"}},
                %h: tensor<?x16xbf16>) -> tensor<?x16xbf16> {
  %kc1 = llmserve.kv_write %h into %kc at %slots : tensor<?x16xbf16>, tensor<?x4x2x8xbf16>, tensor<?xi32>
  %vc1 = llmserve.kv_write %h into %vc at %slots : tensor<?x16xbf16>, tensor<?x4x2x8xbf16>, tensor<?xi32>
  %o, %lse = llmserve.paged_attention %h, %kc1, %vc1 block_table %bt context_len %cl query_start %qs num_heads 2 scale 0.35 : tensor<?x16xbf16>, tensor<?x4x2x8xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x2xf32>
  return %o : tensor<?x16xbf16>
}

// -----

// A checkpoint's scales (the kv_cache attribute's `scale`, which llmc
// import reads from a compressed-tensors kv_cache_scheme): each cache's
// kv_write and its side of paged_attention take them.
// CHECK-LABEL: func.func @checkpoint_scales
//       CHECK:   llmserve.kv_write {{.*}} scale [1.250000e-02] :
//       CHECK:   llmserve.kv_write {{.*}} scale [5.000000e-01] :
//       CHECK:   llmserve.paged_attention {{.*}} kv_scales [1.250000e-02], [5.000000e-01] :
func.func @checkpoint_scales(%bt: tensor<?x?xi32> {llmserve.contract = "block_table"},
                %cl: tensor<?xi32> {llmserve.contract = "context_len"},
                %qs: tensor<?xi32> {llmserve.contract = "query_start"},
                %slots: tensor<?xi32> {llmserve.contract = "slot_mapping"},
                %kc: tensor<?x4x2x8xf32> {llmserve.kv_cache = {layer = 0 : i64, role = "k", scale = array<f32: 1.250000e-02>}},
                %vc: tensor<?x4x2x8xf32> {llmserve.kv_cache = {layer = 0 : i64, role = "v", scale = array<f32: 5.000000e-01>}},
                %h: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %kc1 = llmserve.kv_write %h into %kc at %slots : tensor<?x16xf32>, tensor<?x4x2x8xf32>, tensor<?xi32>
  %vc1 = llmserve.kv_write %h into %vc at %slots : tensor<?x16xf32>, tensor<?x4x2x8xf32>, tensor<?xi32>
  %o, %lse = llmserve.paged_attention %h, %kc1, %vc1 block_table %bt context_len %cl query_start %qs num_heads 2 scale 0.35 : tensor<?x16xf32>, tensor<?x4x2x8xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x2xf32>
  return %o : tensor<?x16xf32>
}

// -----

// One scale per KV head (strategy attn_head): kv_write and paged_attention
// take the array as it is.
// CHECK-LABEL: func.func @per_head_scales
//       CHECK:   llmserve.kv_write {{.*}} scale [1.250000e-02, 2.500000e-02] :
//       CHECK:   llmserve.kv_write {{.*}} scale [5.000000e-01, 2.500000e-01] :
//       CHECK:   llmserve.paged_attention {{.*}} kv_scales [1.250000e-02, 2.500000e-02], [5.000000e-01, 2.500000e-01] :
func.func @per_head_scales(%bt: tensor<?x?xi32> {llmserve.contract = "block_table"},
                %cl: tensor<?xi32> {llmserve.contract = "context_len"},
                %qs: tensor<?xi32> {llmserve.contract = "query_start"},
                %slots: tensor<?xi32> {llmserve.contract = "slot_mapping"},
                %kc: tensor<?x4x2x8xf32> {llmserve.kv_cache = {layer = 0 : i64, role = "k", scale = array<f32: 1.25e-02, 2.5e-02>}},
                %vc: tensor<?x4x2x8xf32> {llmserve.kv_cache = {layer = 0 : i64, role = "v", scale = array<f32: 0.5, 0.25>}},
                %h: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %kc1 = llmserve.kv_write %h into %kc at %slots : tensor<?x16xf32>, tensor<?x4x2x8xf32>, tensor<?xi32>
  %vc1 = llmserve.kv_write %h into %vc at %slots : tensor<?x16xf32>, tensor<?x4x2x8xf32>, tensor<?xi32>
  %o, %lse = llmserve.paged_attention %h, %kc1, %vc1 block_table %bt context_len %cl query_start %qs num_heads 2 scale 0.35 : tensor<?x16xf32>, tensor<?x4x2x8xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x2xf32>
  return %o : tensor<?x16xf32>
}

// -----

// expected-error @+1 {{'func.func' op argument #1: the scales of a KV cache are one positive, finite f32 or one per KV head (2), got array<f32: -1.000000e+00>}}
func.func @negative_scale(%slots: tensor<?xi32> {llmserve.contract = "slot_mapping"},
                          %kc: tensor<?x4x2x8xf32> {llmserve.kv_cache = {layer = 0 : i64, role = "k", scale = array<f32: -1.0>}},
                          %h: tensor<?x16xf32>) {
  %kc1 = llmserve.kv_write %h into %kc at %slots : tensor<?x16xf32>, tensor<?x4x2x8xf32>, tensor<?xi32>
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #1: the scales of a KV cache are one positive, finite f32 or one per KV head (2), got array<f32: 1.000000e+00, 2.000000e+00, 3.000000e+00>}}
func.func @scale_per_query_head(%slots: tensor<?xi32> {llmserve.contract = "slot_mapping"},
                                %kc: tensor<?x4x2x8xf32> {llmserve.kv_cache = {layer = 0 : i64, role = "k", scale = array<f32: 1.0, 2.0, 3.0>}},
                                %h: tensor<?x16xf32>) {
  %kc1 = llmserve.kv_write %h into %kc at %slots : tensor<?x16xf32>, tensor<?x4x2x8xf32>, tensor<?xi32>
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #1: the scales of a KV cache are one positive, finite f32 or one per KV head (2), got "big"}}
func.func @string_scale(%slots: tensor<?xi32> {llmserve.contract = "slot_mapping"},
                        %kc: tensor<?x4x2x8xf32> {llmserve.kv_cache = {layer = 0 : i64, role = "k", scale = "big"}},
                        %h: tensor<?x16xf32>) {
  %kc1 = llmserve.kv_write %h into %kc at %slots : tensor<?x16xf32>, tensor<?x4x2x8xf32>, tensor<?xi32>
  return
}

// -----

// A cache already in FP8 keeps its scales.
// CHECK-LABEL: func.func @already_fp8
//       CHECK:   llmserve.kv_write {{.*}} scale [2.500000e-01] :
func.func @already_fp8(%slots: tensor<?xi32> {llmserve.contract = "slot_mapping"},
                       %kc: tensor<?x4x2x8xf8E4M3FN> {llmserve.kv_cache = {layer = 0 : i64, role = "k"}},
                       %h: tensor<?x16xf32>) {
  %kc1 = llmserve.kv_write %h into %kc at %slots scale [0.25] : tensor<?x16xf32>, tensor<?x4x2x8xf8E4M3FN>, tensor<?xi32>
  return
}

// -----

// Only kv_write and paged_attention know the cache's codes.
func.func @returned_cache(%slots: tensor<?xi32> {llmserve.contract = "slot_mapping"},
                          %kc: tensor<?x4x2x8xf32> {llmserve.kv_cache = {layer = 0 : i64, role = "k"}},
                          %h: tensor<?x16xf32>) -> tensor<?x4x2x8xf32> {
  %kc1 = llmserve.kv_write %h into %kc at %slots : tensor<?x16xf32>, tensor<?x4x2x8xf32>, tensor<?xi32>
  // expected-error @+1 {{'func.return' op uses a KV cache, which only kv_write (as its cache) and paged_attention may read when it is stored in FP8}}
  return %kc1 : tensor<?x4x2x8xf32>
}
