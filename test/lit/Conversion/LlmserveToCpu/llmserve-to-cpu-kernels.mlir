// RUN: %llmserve-opt %s -llmserve-to-cpu-kernels -split-input-file | FileCheck %s

// A linear with a dynamic row count whose weight is read only by linear ops:
// the weight is asked for in panels of 16 columns, and the kernel is linalg
// on tensor views of its workgroup's block (rows in blocks of 64, panels in
// blocks of 6): y viewed as [rows][panels][16] is filled with zeros, then the
// contraction over k accumulates into it in place. Bindings x, w, y; push
// constants are the dynamic sizes (x's rows, y's rows).
// CHECK-LABEL: func.func @linear
//       CHECK:   llmserve.weight "w" {llmserve.layout = "panels16"}
//       CHECK:   llmserve.linear
//  CHECK-SAME:     llmserve.dispatch = {grid = ["ceildiv($0,64)", "2", "1"], kernel = "d0_linear", symbol = "llmserve_d0_linear"}
//       CHECK: module @kernels
//       CHECK:   func.func @llmserve_d0_linear(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64)
//       CHECK:     builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)> to memref<?x32xf32>
//       CHECK:     builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64, array<3 x i64>, array<3 x i64>)> to memref<8x32x16xf32>
//       CHECK:     %[[X:.+]] = bufferization.to_tensor %{{.+}} restrict : memref<?x32xf32, strided<[32, 1], offset: ?>> to tensor<?x32xf32>
//       CHECK:     %[[W:.+]] = bufferization.to_tensor %{{.+}} restrict : memref<?x32x16xf32, strided<[512, 16, 1], offset: ?>> to tensor<?x32x16xf32>
//       CHECK:     builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64, array<3 x i64>, array<3 x i64>)> to memref<?x8x16xf32>
//       CHECK:     %[[Y:.+]] = bufferization.to_tensor %[[YVIEW:.+]] restrict writable : memref<?x?x16xf32, strided<[128, 16, 1], offset: ?>> to tensor<?x?x16xf32>
//       CHECK:     %[[ZEROS:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[Y]] : tensor<?x?x16xf32>)
//       CHECK:     %[[SUM:.+]] = linalg.generic
//  CHECK-SAME:       iterator_types = ["parallel", "parallel", "parallel", "reduction"]
//  CHECK-SAME:       ins(%[[X]], %[[W]] : tensor<?x32xf32>, tensor<?x32x16xf32>) outs(%[[ZEROS]] : tensor<?x?x16xf32>)
//       CHECK:       arith.mulf
//       CHECK:       arith.addf
//       CHECK:     bufferization.materialize_in_destination %[[SUM]] in restrict writable %[[YVIEW]]
func.func @linear(%x: tensor<?x32xf32>) -> tensor<?x128xf32> {
  %w = llmserve.weight "w" : tensor<128x32xf32>
  %y = llmserve.linear %x, %w : tensor<?x32xf32>, tensor<128x32xf32> -> tensor<?x128xf32>
  return %y : tensor<?x128xf32>
}

// -----

// With a bias, y starts as the bias broadcast over the rows (the bias viewed
// as [panels][16]).
// CHECK-LABEL: func.func @linear_bias
//       CHECK:   llmserve.weight "w" {llmserve.layout = "panels16"}
//       CHECK: func.func @llmserve_d0_linear
//       CHECK:   %[[B:.+]] = bufferization.to_tensor %{{.+}} restrict : memref<?x16xf32, strided<[16, 1], offset: ?>> to tensor<?x16xf32>
//       CHECK:   %[[INIT:.+]] = linalg.broadcast ins(%[[B]] : tensor<?x16xf32>) outs(%{{.+}} : tensor<?x?x16xf32>) dimensions = [0]
//       CHECK:   linalg.generic
//  CHECK-SAME:     outs(%[[INIT]] : tensor<?x?x16xf32>)
func.func @linear_bias(%x: tensor<?x32xf32>) -> tensor<?x48xf32> {
  %w = llmserve.weight "w" : tensor<48x32xf32>
  %b = llmserve.weight "b" : tensor<48xf32>
  %y = llmserve.linear %x, %w bias %b : tensor<?x32xf32>, tensor<48x32xf32>, tensor<48xf32> -> tensor<?x48xf32>
  return %y : tensor<?x48xf32>
}

// -----

// A weight whose rows are not a whole number of 16-column panels keeps its
// row-major layout (the dot-product kernel below).
// CHECK-LABEL: func.func @linear_partial_panel
//       CHECK:   llmserve.weight "w" : tensor<120x32xf32>
//       CHECK: func.func @llmserve_d0_linear
//   CHECK-NOT:   linalg
//       CHECK:   vector.reduction <add>
func.func @linear_partial_panel(%x: tensor<?x32xf32>) -> tensor<?x120xf32> {
  %w = llmserve.weight "w" : tensor<120x32xf32>
  %y = llmserve.linear %x, %w : tensor<?x32xf32>, tensor<120x32xf32> -> tensor<?x120xf32>
  return %y : tensor<?x120xf32>
}

// -----

// An int8 weight keeps its row-major layout: the dot-product kernel converts
// each 16-byte load of it to f32, and scales each sum by its row's scale
// before the bias. Bindings x, values, scales, bias, y.
// CHECK-LABEL: func.func @linear_int8
//       CHECK:   llmserve.weight "w" quantized int8_channel values : tensor<64x32xi8>
//       CHECK: func.func @llmserve_d0_linear
//       CHECK:   to memref<64x32xi8>
//       CHECK:   to memref<64xf32>
//       CHECK:   %[[Q:.+]] = vector.load %{{.+}} : memref<64x32xi8>, vector<16xi8>
//       CHECK:   %[[W:.+]] = arith.sitofp %[[Q]] : vector<16xi8> to vector<16xf32>
//       CHECK:   vector.fma %{{.+}}, %[[W]], %{{.+}} : vector<16xf32>
//       CHECK:   vector.reduction <add>
//       CHECK:   %[[SCALE:.+]] = memref.load %{{.+}} : memref<64xf32>
//       CHECK:   %[[SCALED:.+]] = arith.mulf %{{.+}}, %[[SCALE]]
//       CHECK:   %[[BIAS:.+]] = memref.load %{{.+}} : memref<64xf32>
//       CHECK:   arith.addf %[[SCALED]], %[[BIAS]]
func.func @linear_int8(%x: tensor<?x32xf32>) -> tensor<?x64xf32> {
  %v = llmserve.weight "w" quantized int8_channel values : tensor<64x32xi8>
  %s = llmserve.weight "w" quantized int8_channel scales : tensor<64xf32>
  %b = llmserve.weight "b" : tensor<64xf32>
  %y = llmserve.linear %x, %v scales %s bias %b : tensor<?x32xf32>, tensor<64x32xi8>, tensor<64xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// A weight read as an embedding table and as a linear weight (tied word
// embeddings) is stored in panels too: the embedding kernel reads row r as
// lane r % 16 of panel r / 16, and the linear is the linalg kernel.
// CHECK-LABEL: func.func @tied_embedding
//       CHECK:   llmserve.weight "embed" {llmserve.layout = "panels16"}
//       CHECK: func.func @llmserve_d0_embedding
//       CHECK:   to memref<2x16x16xf32>
//       CHECK:   %[[PANEL:.+]] = arith.divui %{{.+}}, %c16{{.*}} : index
//       CHECK:   %[[LANE:.+]] = arith.remui %{{.+}}, %c16{{.*}} : index
//       CHECK:   memref.load %{{.+}}[%[[PANEL]], %{{.+}}, %[[LANE]]] : memref<2x16x16xf32>
//       CHECK: func.func @llmserve_d1_linear
//       CHECK:   linalg.generic
func.func @tied_embedding(%ids: tensor<?xi32>) -> tensor<?x32xf32> {
  %table = llmserve.weight "embed" : tensor<32x16xf32>
  %x = llmserve.embedding %table, %ids : tensor<32x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
  %y = llmserve.linear %x, %table : tensor<?x16xf32>, tensor<32x16xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// A table read only by embedding keeps its row-major layout.
// CHECK-LABEL: func.func @embedding_only
//       CHECK:   llmserve.weight "embed" : tensor<32x16xf32>
//       CHECK: func.func @llmserve_d0_embedding
//       CHECK:   to memref<32x16xf32>
//   CHECK-NOT:   arith.remui
//       CHECK:   return
func.func @embedding_only(%ids: tensor<?xi32>) -> tensor<?x16xf32> {
  %table = llmserve.weight "embed" : tensor<32x16xf32>
  %x = llmserve.embedding %table, %ids : tensor<32x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
  return %x : tensor<?x16xf32>
}

// -----

// A weight that is an argument keeps its row-major layout: 4x4 tiles of
// 16-wide FMAs along K, each reduced at the end.
// CHECK-LABEL: func.func @linear_row_major
//       CHECK: func.func @llmserve_d0_linear
//       CHECK:   scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>
//   CHECK-COUNT-8:     vector.load
//  CHECK-COUNT-16:     vector.fma
//       CHECK:   vector.reduction <add>, %{{.*}} fastmath<reassoc> : vector<16xf32> into f32
func.func @linear_row_major(%x: tensor<?x32xf32>, %w: tensor<128x32xf32>) -> tensor<?x128xf32> {
  %y = llmserve.linear %x, %w : tensor<?x32xf32>, tensor<128x32xf32> -> tensor<?x128xf32>
  return %y : tensor<?x128xf32>
}

// -----

// kv_write updates its cache in place: the cache is bound once, and the
// kernel writes through a [slots, width] view of it.
// CHECK-LABEL: func.func @kv_write
//       CHECK:   llmserve.kv_write
//  CHECK-SAME:     kernel = "d0_kv_write"
//       CHECK: func.func @llmserve_d0_kv_write
//       CHECK:   scf.if
//       CHECK:     memref.store
func.func @kv_write(%k: tensor<?x32xf32>, %cache: tensor<?x4x2x16xf32>, %slots: tensor<?xi32>) -> tensor<?x4x2x16xf32> {
  %c = llmserve.kv_write %k into %cache at %slots : tensor<?x32xf32>, tensor<?x4x2x16xf32>, tensor<?xi32>
  return %c : tensor<?x4x2x16xf32>
}

// -----

// Attention runs one workgroup per (query row, pair of query heads sharing
// a KV head: 4 heads over 2 KV heads) over tiles of one KV block (4 keys
// here). Each key row is loaded once for both heads' scores, by vector dot
// products (head_dim 16: one vector<16xf32>); each head's exponentials are
// one vector<4xf32>; each value row is loaded once for both heads' vector
// FMAs into the accumulators carried by the tile loop, a maximum, a sum and
// an accumulator per head. rope gets its frequency table as a constant
// global next to the kernel.
// CHECK-LABEL: func.func @attention
//       CHECK:   llmserve.rope
//  CHECK-SAME:     kernel = "d0_rope"
//       CHECK:   llmserve.paged_attention
//  CHECK-SAME:     grid = ["$0", "2", "1"], kernel = "d1_paged_attention"
//       CHECK: memref.global "private" constant @llmserve_d0_rope_inv_freq : memref<8xf32>
//       CHECK: func.func @llmserve_d1_paged_attention
//       CHECK:   vector.load {{.*}} : memref<?x64xf32>, vector<16xf32>
//       CHECK:   vector.load {{.*}} : memref<?x64xf32>, vector<16xf32>
//       CHECK:   memref.alloca() : memref<2x4xf32>
//       CHECK:   scf.for {{.*}} step %{{.*}} iter_args({{.*}}) -> (f32, f32, vector<16xf32>, f32, f32, vector<16xf32>)
//       CHECK:     scf.for {{.*}} -> (f32, f32)
//       CHECK:       %[[KEY:.+]] = vector.load {{.*}} : memref<?x?xf32>, vector<16xf32>
//       CHECK:       vector.fma %{{.+}}, %[[KEY]], %{{.+}} : vector<16xf32>
//       CHECK:       vector.reduction <add>, {{.*}} fastmath<reassoc> : vector<16xf32> into f32
//       CHECK:       vector.fma %{{.+}}, %[[KEY]], %{{.+}} : vector<16xf32>
//       CHECK:       vector.reduction <add>, {{.*}} fastmath<reassoc> : vector<16xf32> into f32
//       CHECK:     math.exp {{.*}} : vector<4xf32>
//       CHECK:     math.exp {{.*}} : vector<4xf32>
//       CHECK:     scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>)
//       CHECK:       %[[VALUE:.+]] = vector.load {{.*}} : memref<?x?xf32>, vector<16xf32>
//       CHECK:       vector.fma %{{.+}}, %[[VALUE]], %{{.+}} : vector<16xf32>
//       CHECK:       vector.fma %{{.+}}, %[[VALUE]], %{{.+}} : vector<16xf32>
//       CHECK:   vector.store {{.*}} : memref<?x64xf32>, vector<16xf32>
//       CHECK:   vector.store {{.*}} : memref<?x64xf32>, vector<16xf32>
func.func @attention(%q: tensor<?x64xf32>, %pos: tensor<?xi32>, %kc: tensor<?x4x2x16xf32>, %vc: tensor<?x4x2x16xf32>, %bt: tensor<?x?xi32>, %cl: tensor<?xi32>, %qs: tensor<?xi32>) -> (tensor<?x64xf32>, tensor<?x4xf32>) {
  %r = llmserve.rope %q, %pos style neox head_dim 16 rotary_dim 16 theta 1.000000e+04 : tensor<?x64xf32>, tensor<?xi32>
  %o, %lse = llmserve.paged_attention %r, %kc, %vc block_table %bt context_len %cl query_start %qs num_heads 4 scale 2.500000e-01 : tensor<?x64xf32>, tensor<?x4x2x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4xf32>
  return %o, %lse : tensor<?x64xf32>, tensor<?x4xf32>
}

// -----

// FP8 caches with a scale per KV head: kv_write divides each head's columns
// by that head's scale; attention selects its workgroup's KV head's scales
// once and multiplies the decoded codes by them.
// CHECK-LABEL: func.func @llmserve_d0_kv_write
//       CHECK:   scf.if
//       CHECK:     scf.for %[[HEAD:[^ ]+]] = %{{.+}} to %{{.+}} step
//       CHECK:       %[[IS1:[^ ]+]] = arith.cmpi eq, %[[HEAD]], %c1
//       CHECK:       %[[SCALE:[^ ]+]] = arith.select %[[IS1]], %{{.+}}, %{{.+}} : f32
//       CHECK:       scf.for
//       CHECK:         arith.divf %{{.+}}, %[[SCALE]] : f32
// CHECK-LABEL: func.func @llmserve_d1_paged_attention
//       CHECK:   %[[KEYSCALE:[^ ]+]] = arith.select %{{.+}}, %cst{{.*}}, %cst{{.*}} : f32
//       CHECK:   %[[VALUESCALE:[^ ]+]] = arith.select %{{.+}}, %cst{{.*}}, %cst{{.*}} : f32
//       CHECK:   vector.broadcast %[[KEYSCALE]] : f32 to vector<16xf32>
//       CHECK:   vector.broadcast %[[VALUESCALE]] : f32 to vector<16xf32>
func.func @attention_fp8_per_head(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %slots: tensor<?xi32>, %kc: tensor<?x4x2x16xf8E4M3FN>, %vc: tensor<?x4x2x16xf8E4M3FN>, %bt: tensor<?x?xi32>, %cl: tensor<?xi32>, %qs: tensor<?xi32>) -> (tensor<?x64xf32>, tensor<?x4xf32>) {
  %kc1 = llmserve.kv_write %k into %kc at %slots scale [0.5, 0.25] : tensor<?x32xf32>, tensor<?x4x2x16xf8E4M3FN>, tensor<?xi32>
  %o, %lse = llmserve.paged_attention %q, %kc1, %vc block_table %bt context_len %cl query_start %qs num_heads 4 scale 2.500000e-01 kv_scales [0.5, 0.25], [1.0, 2.0] : tensor<?x64xf32>, tensor<?x4x2x16xf8E4M3FN>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4xf32>
  return %o, %lse : tensor<?x64xf32>, tensor<?x4xf32>
}

// -----

// longrope: the table holds the frequencies with the short factors, then
// with the long ones. Each row finds its sequence in query_start (the last
// s with query_start[s] <= row) and reads the long half (offset 2 pairs)
// when that sequence's context_len exceeds original_max_position (16); cos
// and sin are scaled by attention_factor. The 12 channels of each head past
// rotary_dim pass through.
// CHECK-LABEL: func.func @rope_longrope
//       CHECK:   llmserve.rope
//  CHECK-SAME:     llmserve.dispatch = {grid = ["ceildiv($0,4)", "1", "1"], kernel = "d0_rope"
//       CHECK: memref.global "private" constant @llmserve_d0_rope_inv_freq : memref<4xf32> = dense<[1.000000e+00, 5.000000e-03, 5.000000e-01, 6.250000e-04]>
//       CHECK: func.func @llmserve_d0_rope
//       CHECK:   scf.for %[[ROW:.*]] = {{.*}} {
//       CHECK:     scf.for {{.*}} iter_args({{.*}}) -> (index) {
//       CHECK:       %[[START:.*]] = arith.index_cast {{.*}} : i32 to index
//       CHECK:       arith.cmpi ule, %[[START]], %[[ROW]] : index
//       CHECK:     %[[CONTEXT:.*]] = arith.index_cast {{.*}} : i32 to index
//       CHECK:     %[[LONG:.*]] = arith.cmpi sgt, %[[CONTEXT]], %c16 : index
//       CHECK:     %[[OFFSET:.*]] = arith.select %[[LONG]], %c2, %{{.*}} : index
//       CHECK:     scf.for %[[PAIR:.*]] = {{.*}} {
//       CHECK:       arith.addi %[[OFFSET]], %[[PAIR]] : index
//       CHECK:       %[[COS:.*]] = math.cos
//       CHECK:       %[[SIN:.*]] = math.sin
//       CHECK:       %[[FACTOR:.*]] = arith.constant 1.250000e+00 : f32
//       CHECK:       arith.mulf %[[COS]], %[[FACTOR]] : f32
//       CHECK:       arith.mulf %[[SIN]], %[[FACTOR]] : f32
//       CHECK:     scf.for
//       CHECK:       scf.for {{.*}} = %c4{{.*}} to %c16
func.func @rope_longrope(%x: tensor<?x48xf32>, %pos: tensor<?xi32>, %cl: tensor<?xi32>, %qs: tensor<?xi32>) -> tensor<?x48xf32> {
  %r = llmserve.rope %x, %pos context_len %cl query_start %qs style neox head_dim 16 rotary_dim 4 theta 1.0e4 scaling longrope original_max_position 16 short_factor dense<[1.0, 2.0]> : tensor<2xf32> long_factor dense<[2.0, 16.0]> : tensor<2xf32> attention_factor 1.25 : tensor<?x48xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  return %r : tensor<?x48xf32>
}

// -----

// adjust_logits copies each row, through its mask row when it has one in
// bounds (a bit per token, shifted out of its word), then rewrites the entry
// tokens of the row's [entries[s], entries[s+1]) range, clamped to the P
// entries: penalties only for counts >= 0, then the bias.
// CHECK-LABEL: func.func @adjust_logits
//       CHECK:   llmserve.adjust_logits
//  CHECK-SAME:     llmserve.dispatch = {grid = ["ceildiv($0,4)", "1", "1"], kernel = "d0_adjust_logits"
//       CHECK: func.func @llmserve_d0_adjust_logits
//       CHECK:   scf.for
//       CHECK:     scf.if
//       CHECK:       scf.for
//       CHECK:         arith.shrui
//       CHECK:         arith.select
//       CHECK:     } else {
//       CHECK:       scf.for
//       CHECK:     arith.maxsi
//       CHECK:     arith.minsi
//       CHECK:     scf.for
//       CHECK:       scf.if
//       CHECK:         arith.divf
//       CHECK:         arith.mulf
//       CHECK:         arith.select
//       CHECK:         arith.addf
func.func @adjust_logits(%l: tensor<?x64xf32>, %ps: tensor<?xi32>, %pt: tensor<?xi32>, %pc: tensor<?xi32>, %pb: tensor<?xf32>,
                         %pp: tensor<?xf32>, %fp: tensor<?xf32>, %rp: tensor<?xf32>, %mi: tensor<?xi32>, %mw: tensor<?xi32>) -> tensor<?x64xf32> {
  %o = llmserve.adjust_logits %l entries %ps tokens %pt counts %pc bias %pb presence %pp frequency %fp repetition %rp mask_index %mi mask %mw
      : tensor<?x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x64xf32>
  return %o : tensor<?x64xf32>
}

// -----

// logprobs: rows that ask (num >= 0) get a log-sum-exp, then one pass over
// the vocabulary that inserts each logit ranking before the last of a sorted
// stack list of the top entries (moving the lower ones down), then the list
// out, token -1 past its end.
// CHECK-LABEL: func.func @logprobs
//       CHECK:   llmserve.logprobs
//  CHECK-SAME:     kernel = "d0_logprobs"
//       CHECK: func.func @llmserve_d0_logprobs
//       CHECK:   %[[VALUES:.*]] = memref.alloca() : memref<20xf32>
//       CHECK:   %[[INDICES:.*]] = memref.alloca() : memref<20xindex>
//       CHECK:   scf.if
//       CHECK:     math.log
//       CHECK:     arith.constant 20 : index
//       CHECK:     %[[LISTED:.*]] = scf.for {{.*}} -> (index)
//       CHECK:       arith.cmpf ord
//       CHECK:       scf.if %{{.*}} -> (index)
//       CHECK:         scf.for {{.*}} -> (index, i1)
//       CHECK:           memref.store %{{.*}}, %[[VALUES]]
//       CHECK:           memref.store %{{.*}}, %[[INDICES]]
//       CHECK:     scf.for
//       CHECK:       arith.cmpi slt, %{{.*}}, %[[LISTED]]
func.func @logprobs(%l: tensor<?x64xf32>, %t: tensor<?xi32>, %n: tensor<?xi32>)
    -> (tensor<?xf32>, tensor<?x20xi32>, tensor<?x20xf32>) {
  %lp, %tt, %tl = llmserve.logprobs %l tokens %t num %n
      : tensor<?x64xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?xf32>, tensor<?x20xi32>, tensor<?x20xf32>
  return %lp, %tt, %tl : tensor<?xf32>, tensor<?x20xi32>, tensor<?x20xf32>
}

// -----

// An elementwise linalg.generic (llmserve-to-linalg) binds its inputs and its
// result, not its init; each workgroup takes 4096 elements of the flattened
// buffers as tensors and applies the generic's body to them, written back in
// place once bufferized.
// CHECK-LABEL: func.func @elementwise_generic
//       CHECK:   linalg.generic
//  CHECK-SAME:     llmserve.dispatch = {grid = ["ceildiv($0*64,4096)", "1", "1"], kernel = "d0_generic", symbol = "llmserve_d0_generic"}
//       CHECK: func.func @llmserve_d0_generic(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64)
//       CHECK:   %[[X:.+]] = memref.subview %{{.*}}[%[[BEGIN:.+]]] [%[[SIZE:.+]]] [1] : memref<?xf32> to memref<?xf32, strided<[1], offset: ?>>
//       CHECK:   %[[Y:.+]] = memref.subview %{{.*}}[%[[BEGIN]]] [%[[SIZE]]] [1] : memref<?xf32> to memref<?xf32, strided<[1], offset: ?>>
//       CHECK:   %[[XT:.+]] = bufferization.to_tensor %[[X]] restrict : memref<?xf32, strided<[1], offset: ?>> to tensor<?xf32>
//       CHECK:   %[[YT:.+]] = bufferization.to_tensor %[[Y]] restrict writable : memref<?xf32, strided<[1], offset: ?>> to tensor<?xf32>
//       CHECK:   %[[R:.+]] = linalg.generic {indexing_maps = [#{{.+}}, #{{.+}}], iterator_types = ["parallel"]} ins(%[[XT]] : tensor<?xf32>) outs(%[[YT]] : tensor<?xf32>)
//       CHECK:     math.erf
//       CHECK:   bufferization.materialize_in_destination %[[R]] in restrict writable %[[Y]]
func.func @elementwise_generic(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x64xf32>) outs(%x : tensor<?x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.erf %in : f32
    linalg.yield %e : f32
  } -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// A dispatch region of two panel linears and the elementwise generic over
// their outputs (llmserve-form-dispatch-regions) is one kernel. Per block:
// the first contraction accumulates into a block buffer on the stack, the
// last into the output's slice, and the generic reads both and writes the
// output's slice in place. Bindings: the region's inputs, then its result.
// CHECK-LABEL: func.func @dispatch_region
//       CHECK:   llmserve.weight "gate" {llmserve.layout = "panels16"}
//       CHECK:   llmserve.weight "up" {llmserve.layout = "panels16"}
//       CHECK:   llmserve.dispatch_region
//       CHECK:   llmserve.dispatch = {grid = ["ceildiv($0,64)", "1", "1"], kernel = "d0_dispatch_region", symbol = "llmserve_d0_dispatch_region"}
//       CHECK: func.func @llmserve_d0_dispatch_region(
//       CHECK:   %[[STACK:.+]] = memref.alloca() : memref<64x6x16xf32>
//       CHECK:   %[[TMP_VIEW:.+]] = memref.subview %[[STACK]][0, 0, 0]
//       CHECK:   %[[TMP:.+]] = bufferization.to_tensor %[[TMP_VIEW]] restrict writable
//       CHECK:   %[[ZERO_G:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[TMP]] : tensor<?x?x16xf32>)
//       CHECK:   %[[GATE:.+]] = linalg.generic
//  CHECK-SAME:     outs(%[[ZERO_G]] : tensor<?x?x16xf32>)
//       CHECK:   %[[Y:.+]] = bufferization.to_tensor %[[YVIEW:.+]] restrict writable : memref<?x?x16xf32, strided<[80, 16, 1], offset: ?>>
//       CHECK:   %[[ZERO_U:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[Y]] : tensor<?x?x16xf32>)
//       CHECK:   %[[UP:.+]] = linalg.generic
//  CHECK-SAME:     outs(%[[ZERO_U]] : tensor<?x?x16xf32>)
//       CHECK:   %[[H:.+]] = linalg.generic
//  CHECK-SAME:     iterator_types = ["parallel", "parallel", "parallel"]
//  CHECK-SAME:     ins(%[[GATE]], %[[UP]] : tensor<?x?x16xf32>, tensor<?x?x16xf32>) outs(%[[UP]] : tensor<?x?x16xf32>)
//       CHECK:     math.exp
//       CHECK:   bufferization.materialize_in_destination %[[H]] in restrict writable %[[YVIEW]]
func.func @dispatch_region(%x: tensor<?x32xf32>) -> tensor<?x80xf32> {
  %wg = llmserve.weight "gate" : tensor<80x32xf32>
  %wu = llmserve.weight "up" : tensor<80x32xf32>
  %h = llmserve.dispatch_region(%x, %wg, %wu)
      : (tensor<?x32xf32>, tensor<80x32xf32>, tensor<80x32xf32>) -> tensor<?x80xf32> {
  ^bb0(%in: tensor<?x32xf32>, %g: tensor<80x32xf32>, %u: tensor<80x32xf32>):
    %gate = llmserve.linear %in, %g : tensor<?x32xf32>, tensor<80x32xf32> -> tensor<?x80xf32>
    %up = llmserve.linear %in, %u : tensor<?x32xf32>, tensor<80x32xf32> -> tensor<?x80xf32>
    %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                         iterator_types = ["parallel", "parallel"]}
        ins(%gate, %up : tensor<?x80xf32>, tensor<?x80xf32>) outs(%gate : tensor<?x80xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %n = arith.negf %a : f32
      %e = math.exp %n : f32
      %p = arith.mulf %e, %b : f32
      linalg.yield %p : f32
    } -> tensor<?x80xf32>
    llmserve.yield %s : tensor<?x80xf32>
  }
  return %h : tensor<?x80xf32>
}

// -----

// rms_norm with the residual is linalg on tensor views of the workgroup's
// rows: the residual add into residual_out, the per-row sum of squares into
// a stack buffer of 4 (the rows of a workgroup), rsqrt(sum / D + epsilon) in
// place, then s · rsqrt · weight into the result (the weight broadcast over
// the rows, the rsqrt over the columns).
// CHECK-DAG: #[[ROW:.+]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[COL:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[EL:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @rms_norm_residual
//       CHECK: func.func @llmserve_d0_rms_norm(
//       CHECK:   %[[S:.+]] = linalg.generic {indexing_maps = [#[[EL]], #[[EL]], #[[EL]]], iterator_types = ["parallel", "parallel"]}
//       CHECK:     arith.addf
//       CHECK:   bufferization.materialize_in_destination %[[S]]
//       CHECK:   %[[BUF:.+]] = memref.alloca() : memref<4xf32>
//       CHECK:   %[[ZERO:.+]] = linalg.fill
//       CHECK:   %[[SUM:.+]] = linalg.generic {indexing_maps = [#[[EL]], #[[ROW]]], iterator_types = ["parallel", "reduction"]}
//  CHECK-SAME:       ins(%[[S]] : tensor<?x64xf32>) outs(%[[ZERO]] : tensor<?xf32>)
//       CHECK:   %[[INV:.+]] = linalg.generic {{.+}} outs(%[[SUM]] : tensor<?xf32>)
//       CHECK:     math.rsqrt
//       CHECK:   %[[Y:.+]] = linalg.generic {indexing_maps = [#[[EL]], #[[ROW]], #[[COL]], #[[EL]]], iterator_types = ["parallel", "parallel"]}
//  CHECK-SAME:       ins(%[[S]], %[[INV]], %{{.+}} : tensor<?x64xf32>, tensor<?xf32>, tensor<64xf32>)
//       CHECK:   bufferization.materialize_in_destination %[[Y]]
func.func @rms_norm_residual(%x: tensor<?x64xf32>, %r: tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  %w = llmserve.weight "w" : tensor<64xf32>
  %y, %s = llmserve.rms_norm %x, %w residual %r epsilon 1.0e-05 : tensor<?x64xf32>, tensor<64xf32>, tensor<?x64xf32>
  return %y, %s : tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// A per-head norm (a weight of 16 for rows of 64): the rows are read as
// [T * 4, 16] and the grid covers T * 4 of them, 4 a workgroup.
// CHECK-LABEL: func.func @rms_norm_per_head
//       CHECK:   llmserve.rms_norm
//  CHECK-SAME:     grid = ["ceildiv($0*4,4)", "1", "1"]
//       CHECK: func.func @llmserve_d0_rms_norm(
//       CHECK:   %[[ROWS:.+]] = arith.muli %{{.+}}, %c4
//       CHECK:   memref.subview %{{.+}}[%{{.+}}, 0] [%{{.+}}, 16] [1, 1] : memref<?x16xf32> to memref<?x16xf32, strided<[16, 1], offset: ?>>
//       CHECK:   linalg.generic
//  CHECK-SAME:       ins(%{{.+}} : tensor<?x16xf32>)
func.func @rms_norm_per_head(%q: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %w = llmserve.weight "q_norm" : tensor<16xf32>
  %y = llmserve.rms_norm %q, %w epsilon 1.0e-06 : tensor<?x64xf32>, tensor<16xf32>
  return %y : tensor<?x64xf32>
}

// -----

// A sparse MLP's three kernels. moe_router takes 4 tokens a workgroup;
// expert_linear a block of 64 columns (grid x) of one expert (grid y), whose
// routed (token, slot) pairs it lists in two 256-entry stack arrays, then
// computes in tiles of vector FMAs along K over rows of the stacked weight
// viewed as [experts * N, K]; moe_combine 4 tokens a workgroup.
// CHECK-LABEL: func.func @moe
//       CHECK:   llmserve.moe_router
//  CHECK-SAME:     llmserve.dispatch = {grid = ["ceildiv($0,4)", "1", "1"], kernel = "d0_moe_router", symbol = "llmserve_d0_moe_router"}
//       CHECK:   llmserve.expert_linear
//  CHECK-SAME:     llmserve.dispatch = {grid = ["2", "8", "1"], kernel = "d1_expert_linear", symbol = "llmserve_d1_expert_linear"}
//       CHECK:   llmserve.expert_linear
//  CHECK-SAME:     per_slot
//  CHECK-SAME:     llmserve.dispatch = {grid = ["1", "8", "1"], kernel = "d2_expert_linear", symbol = "llmserve_d2_expert_linear"}
//       CHECK:   llmserve.moe_combine
//  CHECK-SAME:     llmserve.dispatch = {grid = ["ceildiv($1,4)", "1", "1"], kernel = "d3_moe_combine", symbol = "llmserve_d3_moe_combine"}
//       CHECK: func.func @llmserve_d0_moe_router
//       CHECK:   math.exp
//       CHECK: func.func @llmserve_d1_expert_linear
//       CHECK:   to memref<1024x64xf32>
//       CHECK:   memref.alloca() : memref<256xindex>
//       CHECK:   memref.alloca() : memref<256xindex>
//       CHECK:   vector.fma {{.*}} : vector<16xf32>
//       CHECK: func.func @llmserve_d3_moe_combine
func.func @moe(%x: tensor<?x64xf32>, %logits: tensor<?x8xf32>, %wg: tensor<8x128x64xf32>,
               %wd: tensor<8x64x128xf32>) -> tensor<?x64xf32> {
  %w, %e = llmserve.moe_router %logits top_k 2 scoring softmax normalized
      : tensor<?x8xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  %h = llmserve.expert_linear %x, %wg experts %e
      : tensor<?x64xf32>, tensor<8x128x64xf32>, tensor<?x2xi32> -> tensor<?x128xf32>
  %d = llmserve.expert_linear %h, %wd experts %e per_slot
      : tensor<?x128xf32>, tensor<8x64x128xf32>, tensor<?x2xi32> -> tensor<?x64xf32>
  %y = llmserve.moe_combine %d, %w : tensor<?x64xf32>, tensor<?x2xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// The sampler, 4 rows a workgroup. A bisection for a top_k or top_p
// threshold looks only at the logits at or above its range's low end: their
// indices, in order, in a stack array that each raised low end compacts in
// place (the count is the bisection loop's third value). Only the top_k
// survivors pay for an exp. Gumbel-max scores the largest logit's token
// first; only the tokens kept whose logit / temperature + 18 (above any
// noise) reaches that score pay for their noise.
// CHECK-LABEL: func.func @sample
//       CHECK:   llmserve.sample
//  CHECK-SAME:     llmserve.dispatch = {grid = ["ceildiv($0,4)", "1", "1"], kernel = "d0_sample", symbol = "llmserve_d0_sample"}
//       CHECK: func.func @llmserve_d0_sample
//       CHECK:   memref.alloca(%{{.*}}) : memref<?xf32>
//       CHECK:   %[[CANDIDATES:.*]] = memref.alloca(%{{.*}}) : memref<?xi32>
//       CHECK:   scf.for
//       CHECK:     scf.if
//       CHECK:       %[[INITIAL:.*]] = scf.for {{.*}} -> (index)
//       CHECK:         memref.store %{{.*}}, %[[CANDIDATES]][%{{.*}}] : memref<?xi32>
//       CHECK:       scf.for {{.*}} iter_args({{.*}}, %[[COUNT:.*]] = %[[INITIAL]]) -> (f32, f32, index)
//       CHECK:         scf.for %{{.*}} = %{{.*}} to %[[COUNT]]
//       CHECK:           memref.load %[[CANDIDATES]]
//       CHECK:         scf.if %{{.*}} -> (index)
//       CHECK:           scf.for %{{.*}} = %{{.*}} to %[[COUNT]]
//       CHECK:             memref.store %{{.*}}, %[[CANDIDATES]]
//       CHECK:     scf.if
//       CHECK:       scf.for
//       CHECK:         scf.if %{{.*}} -> (f32)
//       CHECK:           math.exp
//       CHECK:       scf.for {{.*}} -> (f32, f32, index)
//       CHECK:     scf.if
//       CHECK:       scf.for
//       CHECK:     } else {
//       CHECK:       %[[TOP:.*]]:2 = scf.for
//       CHECK:       math.log
//       CHECK:       math.log
//       CHECK:       %[[FLOOR:.*]] = arith.addf
//       CHECK:       scf.for
//       CHECK:         %[[EIGHTEEN:.*]] = arith.constant 1.800000e+01 : f32
//       CHECK:         %[[BOUND:.*]] = arith.addf %{{.*}}, %[[EIGHTEEN]] : f32
//       CHECK:         arith.cmpf oge, %[[BOUND]], %[[FLOOR]] : f32
//       CHECK:         scf.if %{{.*}} -> (f32)
//       CHECK:           math.log
//       CHECK:           math.log
func.func @sample(%logits: tensor<?x100xf32>, %t: tensor<?xf32>, %p: tensor<?xf32>, %k: tensor<?xi32>,
                  %m: tensor<?xf32>, %seed: tensor<?xi64>, %off: tensor<?xi32>) -> tensor<?xi32> {
  %s = llmserve.sample %logits temperature %t top_p %p top_k %k min_p %m seed %seed rng_offset %off
      : tensor<?x100xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xf32>, tensor<?xi64>, tensor<?xi32> -> tensor<?xi32>
  return %s : tensor<?xi32>
}
