// The PTX of each kernel kind (the functions are written in bf16, which
// --dtype f32 keeps as written). Kernel parameters are one .u64 pointer per
// binding then one .u64 per push constant; no libdevice call is left.
// RUN: %llmc compile %s -o %t.llmb --target sm_90 --dtype f32
// RUN: FileCheck %s --input-file %t.llmb/kernels.ptx --implicit-check-not=__nv_
// RUN: FileCheck %s --input-file %t.llmb/manifest.json --check-prefix=MANIFEST

// CHECK: .target sm_90{{$}}

// MANIFEST: "block": [
// MANIFEST-NEXT: 256,
// MANIFEST-NEXT: 1,
// MANIFEST-NEXT: 1
// MANIFEST: "name": "d0_embedding",
// MANIFEST-NEXT: "programmatic_launch": true,
// MANIFEST-NEXT: "shared_bytes": 0,
// MANIFEST-NEXT: "symbol": "llmserve_d0_embedding"
// MANIFEST: "target": "sm_90"

// CHECK-LABEL: .visible .entry llmserve_d0_embedding(
// CHECK-NEXT:    .param .u64 .ptr .align 1 llmserve_d0_embedding_param_0,
// CHECK-NEXT:    .param .u64 .ptr .align 1 llmserve_d0_embedding_param_1,
// CHECK-NEXT:    .param .u64 .ptr .align 1 llmserve_d0_embedding_param_2,
// CHECK-NEXT:    .param .u64 llmserve_d0_embedding_param_3,
// CHECK-NEXT:    .param .u64 llmserve_d0_embedding_param_4
// CHECK-NEXT: )
// CHECK-NEXT: .maxntid 256, 1, 1
// Every kernel waits for the grids before it, then lets the next launch
// (the runtime launches each as a programmatic dependent launch).
// CHECK:      griddepcontrol.wait;
// CHECK-NEXT: griddepcontrol.launch_dependents;
// CHECK:      ld.global.b16
// CHECK:      st.global.b16
func.func @embedding(%ids: tensor<?xi32> {llmserve.contract = "token_ids"}) -> tensor<?x64xbf16> {
  %e = llmserve.weight "emb" : tensor<100x64xbf16>
  %x = llmserve.embedding %e, %ids : tensor<100x64xbf16>, tensor<?xi32> -> tensor<?x64xbf16>
  return %x : tensor<?x64xbf16>
}

// linear: tensor cores, x and W streamed through 4 shared-memory stages by
// cp.async, W's first copies before the wait for the previous grid.
// CHECK-LABEL: .visible .entry llmserve_d1_linear(
// CHECK:      .shared .align 16 .b8
// CHECK:      cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16, {{.*}};
// CHECK:      griddepcontrol.wait;
// CHECK:      cp.async.commit_group;
// CHECK:      cp.async.wait_group 2;
// CHECK-NEXT: bar.sync 0;
// CHECK:      ld.shared.b32
// CHECK:      mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK:      cvt.rn.bf16.f32
// The kernel for steps of at most 64 rows: 2 warps, x and W streamed through
// shared memory by cp.async, 3 groups in flight while one is multiplied.
// CHECK-LABEL: .visible .entry llmserve_d1_linear_small_m(
// CHECK:      .maxntid 64, 1, 1
// CHECK:      cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16, {{.*}};
// CHECK:      cp.async.commit_group;
// CHECK:      cp.async.wait_group 2;
// CHECK-NEXT: bar.sync 0;
// CHECK:      mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK:      cp.async.wait_group 0;
// CHECK:      cvt.rn.bf16.f32
// The kernel for 17 to 64 rows: 4 warps, 2 groups in flight of 3 stages.
// CHECK-LABEL: .visible .entry llmserve_d1_linear_medium_m(
// CHECK:      .maxntid 128, 1, 1
// CHECK:      cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16, {{.*}};
// CHECK:      cp.async.commit_group;
// CHECK:      cp.async.wait_group 1;
// CHECK-NEXT: bar.sync 0;
// CHECK-COUNT-4: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK:      cvt.rn.bf16.f32
func.func @linear(%x: tensor<8x64xbf16>, %b: tensor<96xbf16>) -> tensor<8x96xbf16> {
  %w = llmserve.weight "w" : tensor<96x64xbf16>
  %y = llmserve.linear %x, %w bias %b : tensor<8x64xbf16>, tensor<96x64xbf16>, tensor<96xbf16> -> tensor<8x96xbf16>
  return %y : tensor<8x96xbf16>
}

// Norms: warp butterflies and a shared partial sum per warp.
// CHECK-LABEL: .visible .entry llmserve_d2_layer_norm(
// CHECK:      shfl.sync.bfly.b32
// CHECK:      st.shared.b32
// CHECK:      bar.sync 0;
// CHECK:      sqrt.rn.f32
func.func @layer_norm(%x: tensor<8x64xbf16>, %r: tensor<8x64xbf16>) -> (tensor<8x64xbf16>, tensor<8x64xbf16>) {
  %w = llmserve.weight "ln.w" : tensor<64xbf16>
  %b = llmserve.weight "ln.b" : tensor<64xbf16>
  %y, %s = llmserve.layer_norm %x, %w, %b residual %r epsilon 1.0e-05 : tensor<8x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<8x64xbf16>
  return %y, %s : tensor<8x64xbf16>, tensor<8x64xbf16>
}

// Attention: K and V tiles in shared memory, a loop over the keys' tiles
// with a barrier on each side of the gather (16 bytes per thread); each lane
// scores one key from 16-byte shared loads, the warp reduces the tile's
// maximum and weight sum, and the weights reach every lane by idx shuffles.
// CHECK-LABEL: .visible .entry llmserve_d4_paged_attention(
// CHECK:      .shared .align 16 .b8
// CHECK:      .shared .align 16 .b8
// CHECK:      .shared .align 16 .b8
// CHECK:      bar.sync 0;
// CHECK:      ld.global.v4.b32
// CHECK:      st.shared.v4.b32
// CHECK:      st.shared.v4.b32
// CHECK:      bar.sync 0;
// CHECK:      ld.shared.v4.b32
// CHECK:      shfl.sync.bfly.b32
// CHECK:      shfl.sync.idx.b32
// CHECK:      st.global.b32
func.func @paged_attention(%kc: tensor<?x16x2x32xbf16> {llmserve.kv_cache = {layer = 0 : i64, role = "k"}}, %vc: tensor<?x16x2x32xbf16> {llmserve.kv_cache = {layer = 0 : i64, role = "v"}}, %bt: tensor<?x?xi32> {llmserve.contract = "block_table"}, %cl: tensor<?xi32> {llmserve.contract = "context_len"}, %qs: tensor<?xi32> {llmserve.contract = "query_start"}, %ids: tensor<?xi32> {llmserve.contract = "token_ids"}) -> tensor<?x128xbf16> {
  %e = llmserve.weight "emb" : tensor<100x128xbf16>
  %x = llmserve.embedding %e, %ids : tensor<100x128xbf16>, tensor<?xi32> -> tensor<?x128xbf16>
  %o, %lse = llmserve.paged_attention %x, %kc, %vc block_table %bt context_len %cl query_start %qs num_heads 4 scale 0.17677669 : tensor<?x128xbf16>, tensor<?x16x2x32xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4xf32>
  return %o : tensor<?x128xbf16>
}

// A split K: the small-M kernel's 8 splits form a cluster (fixed at compile
// time, so a plain launch gives it), and the first block adds the others'
// sums from their shared memory. The first steps' weights are copied before
// the wait for the previous grid, x after it.
// CHECK-LABEL: .visible .entry llmserve_d5_linear_small_m(
// CHECK:      .explicitcluster
// CHECK-NEXT: .reqnctapercluster 1, 1, 8
// CHECK:      mov.u32 {{.*}}, %ctaid.z;
// CHECK:      cp.async.cg.shared.global
// CHECK:      griddepcontrol.wait;
// CHECK-NEXT: griddepcontrol.launch_dependents;
// CHECK:      cp.async.cg.shared.global
// CHECK:      cp.async.commit_group;
// CHECK:      mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK:      st.shared.v4.b32
// CHECK-NEXT: barrier.cluster.arrive.aligned;
// CHECK-NEXT: barrier.cluster.wait.aligned;
// CHECK:      mapa.shared::cluster.u64 {{.*}}, 7;
// CHECK-NEXT: ld.shared::cluster.v4.b32
// CHECK:      barrier.cluster.arrive.aligned;
// CHECK-NEXT: barrier.cluster.wait.aligned;
// CHECK-NEXT: ret;
func.func @linear_split_k(%x: tensor<16x2048xbf16>) -> tensor<16x256xbf16> {
  %w = llmserve.weight "w" : tensor<256x2048xbf16>
  %y = llmserve.linear %x, %w : tensor<16x2048xbf16>, tensor<256x2048xbf16> -> tensor<16x256xbf16>
  return %y : tensor<16x256xbf16>
}

// An FP8 cache: kv_write divides by the scale and rounds to e4m3 codes
// (cvt.rni for the subnormal steps), a byte a store; attention gathers 16
// codes a thread and decodes them once, two per cvt.rn.f16x2.e4m3x2, into
// f16 tiles, which every warp of the GQA group reads widened and scaled
// (K's scale 0.5; V's is 1), decoding nothing itself.
// CHECK-LABEL: .visible .entry llmserve_d{{[0-9]+}}_kv_write(
// CHECK:      cvt.f32.bf16
// CHECK:      cvt.rni.f32.f32
// CHECK:      st.global.b8
// CHECK-LABEL: .visible .entry llmserve_d{{[0-9]+}}_paged_attention(
// CHECK:      ld.global.v4.b32
// CHECK-COUNT-4: mov.b32 {%rs{{[0-9]+}}, %rs{{[0-9]+}}}, %r{{[0-9]+}};
// CHECK-COUNT-8: cvt.rn.f16x2.e4m3x2 %r{{[0-9]+}}, %rs{{[0-9]+}};
// CHECK-NOT:  cvt.rn.f32.u32
// CHECK:      st.shared.v4.b32
// CHECK:      bar.sync 0;
// CHECK-NOT:  cvt.rn.f16x2.e4m3x2
// CHECK:      ld.shared.v4.b32
// CHECK-NOT:  cvt.rn.f16x2.e4m3x2
// CHECK:      cvt.f32.f16
// CHECK-NOT:  cvt.rn.f16x2.e4m3x2
// CHECK:      mul.rn.f32 %{{.*}}, 0f3F000000;
// CHECK-NOT:  cvt.rn.f16x2.e4m3x2
// CHECK:      ld.shared.b16
// CHECK-NEXT: cvt.f32.f16
// CHECK-NOT:  cvt.rn.f16x2.e4m3x2
// CHECK:      ret;
func.func @paged_attention_fp8(%kc: tensor<?x16x2x32xf8E4M3FN> {llmserve.kv_cache = {layer = 0 : i64, role = "k"}}, %vc: tensor<?x16x2x32xf8E4M3FN> {llmserve.kv_cache = {layer = 0 : i64, role = "v"}}, %bt: tensor<?x?xi32> {llmserve.contract = "block_table"}, %cl: tensor<?xi32> {llmserve.contract = "context_len"}, %qs: tensor<?xi32> {llmserve.contract = "query_start"}, %slots: tensor<?xi32> {llmserve.contract = "slot_mapping"}, %ids: tensor<?xi32> {llmserve.contract = "token_ids"}) -> tensor<?x128xbf16> {
  %e = llmserve.weight "emb" : tensor<100x128xbf16>
  %ek = llmserve.weight "emb_k" : tensor<100x64xbf16>
  %x = llmserve.embedding %e, %ids : tensor<100x128xbf16>, tensor<?xi32> -> tensor<?x128xbf16>
  %k = llmserve.embedding %ek, %ids : tensor<100x64xbf16>, tensor<?xi32> -> tensor<?x64xbf16>
  %kc1 = llmserve.kv_write %k into %kc at %slots scale [0.5] : tensor<?x64xbf16>, tensor<?x16x2x32xf8E4M3FN>, tensor<?xi32>
  %o, %lse = llmserve.paged_attention %x, %kc1, %vc block_table %bt context_len %cl query_start %qs num_heads 4 scale 0.17677669 kv_scales [0.5], [1.0] : tensor<?x128xbf16>, tensor<?x16x2x32xf8E4M3FN>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4xf32>
  return %o : tensor<?x128xbf16>
}

// Scales per KV head: kv_write picks a column's by its head (the first 32
// columns are head 0's), attention picks its block's KV head's (blockIdx.y)
// once, and scales the widened tiles by it.
// CHECK-LABEL: .visible .entry llmserve_d{{[0-9]+}}_kv_write(
// CHECK:      setp.lt.u32 [[HEAD0:%p[0-9]+]], %r{{[0-9]+}}, 32;
// CHECK-NEXT: selp.f32 [[KWRITE:%r[0-9]+]], 0f3F000000, 0f3E800000, [[HEAD0]];
// CHECK-NEXT: div.rn.f32 %r{{[0-9]+}}, %r{{[0-9]+}}, [[KWRITE]];
// CHECK-LABEL: .visible .entry llmserve_d{{[0-9]+}}_paged_attention(
// CHECK:      mov.u32 [[KVHEAD:%r[0-9]+]], %ctaid.y;
// CHECK:      setp.eq.b32 [[HEAD1:%p[0-9]+]], [[KVHEAD]], 1;
// CHECK:      selp.f32 [[K:%r[0-9]+]], 0f3E800000, 0f3F000000, [[HEAD1]];
// CHECK-NEXT: selp.f32 [[V:%r[0-9]+]], 0f40000000, 0f3F800000, [[HEAD1]];
// CHECK:      mul.rn.f32 %r{{[0-9]+}}, [[K]], %r{{[0-9]+}};
// CHECK:      mul.rn.f32 %r{{[0-9]+}}, [[V]], %r{{[0-9]+}};
// CHECK:      ret;
func.func @paged_attention_fp8_per_head(%kc: tensor<?x16x2x32xf8E4M3FN> {llmserve.kv_cache = {layer = 0 : i64, role = "k"}}, %vc: tensor<?x16x2x32xf8E4M3FN> {llmserve.kv_cache = {layer = 0 : i64, role = "v"}}, %bt: tensor<?x?xi32> {llmserve.contract = "block_table"}, %cl: tensor<?xi32> {llmserve.contract = "context_len"}, %qs: tensor<?xi32> {llmserve.contract = "query_start"}, %slots: tensor<?xi32> {llmserve.contract = "slot_mapping"}, %ids: tensor<?xi32> {llmserve.contract = "token_ids"}) -> tensor<?x128xbf16> {
  %e = llmserve.weight "emb" : tensor<100x128xbf16>
  %ek = llmserve.weight "emb_k" : tensor<100x64xbf16>
  %x = llmserve.embedding %e, %ids : tensor<100x128xbf16>, tensor<?xi32> -> tensor<?x128xbf16>
  %k = llmserve.embedding %ek, %ids : tensor<100x64xbf16>, tensor<?xi32> -> tensor<?x64xbf16>
  %kc1 = llmserve.kv_write %k into %kc at %slots scale [0.5, 0.25] : tensor<?x64xbf16>, tensor<?x16x2x32xf8E4M3FN>, tensor<?xi32>
  %o, %lse = llmserve.paged_attention %x, %kc1, %vc block_table %bt context_len %cl query_start %qs num_heads 4 scale 0.17677669 kv_scales [0.5, 0.25], [1.0, 2.0] : tensor<?x128xbf16>, tensor<?x16x2x32xf8E4M3FN>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4xf32>
  return %o : tensor<?x128xbf16>
}

// An int4 linear with zero points (a GPTQ checkpoint's): each W byte from
// shared memory holds two columns, whose nibbles minus the zero point
// convert to bf16 for the mma (the low nibble, the lower column, in the
// word's low half); a group of 128 columns adds into the
// accumulators times its scale (fma). An int8 one converts its bytes as they
// are (the lower column in the word's low half) and multiplies each output
// by its row's scale.
// CHECK-LABEL: .visible .entry llmserve_d14_linear_small_m(
// CHECK:      ld.global.s8 [[ZERO:%r[0-9]+]],
// CHECK:      ld.shared.b8 [[BYTE:%r[0-9]+]],
// CHECK-NEXT: and.b32 [[LOW:%r[0-9]+]], [[BYTE]], 15;
// CHECK-NEXT: sub.s32 [[QLOW:%r[0-9]+]], [[LOW]], [[ZERO]];
// CHECK-NEXT: shr.u32 [[HIGH:%r[0-9]+]], [[BYTE]], 4;
// CHECK-NEXT: sub.s32 [[QHIGH:%r[0-9]+]], [[HIGH]], [[ZERO]];
// CHECK-NEXT: cvt.rn.bf16.s32 [[BLOW:%rs[0-9]+]], [[QLOW]];
// CHECK-NEXT: cvt.rn.bf16.s32 [[BHIGH:%rs[0-9]+]], [[QHIGH]];
// CHECK-NEXT: mov.b32 %r{{[0-9]+}}, {[[BLOW]], [[BHIGH]]};
// CHECK:      mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK:      fma.rn.f32
// CHECK-LABEL: .visible .entry llmserve_d15_linear_small_m(
// CHECK:      ld.shared.v2.b8 {[[LOW8:%rs[0-9]+]], %rs{{[0-9]+}}},
// CHECK-NEXT: cvt.s16.s8 [[LOW16:%rs[0-9]+]], [[LOW8]];
// CHECK:      cvt.rn.bf16.s16 [[LOW:%rs[0-9]+]], [[LOW16]];
// CHECK-NEXT: mov.b32 %r{{[0-9]+}}, {[[LOW]], %rs{{[0-9]+}}};
// CHECK:      mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK:      mul.rn.f32
// An FP8 one converts each pair of codes by cvt.rn.f16x2.e4m3x2, then to
// bf16 (the lower column in the word's low half), and adds each group into
// the accumulators times its block's scale.
// CHECK-LABEL: .visible .entry llmserve_d17_linear_small_m(
// CHECK:      ld.shared.b16 [[CODES:%rs[0-9]+]],
// CHECK-NEXT: cvt.rn.f16x2.e4m3x2 [[HALVES:%r[0-9]+]], [[CODES]];
// CHECK-NEXT: mov.b32 {[[LOW:%rs[0-9]+]], [[HIGH:%rs[0-9]+]]}, [[HALVES]];
// CHECK-NEXT: cvt.f32.f16 [[LOWF:%r[0-9]+]], [[LOW]];
// CHECK-NEXT: cvt.f32.f16 [[HIGHF:%r[0-9]+]], [[HIGH]];
// CHECK-NEXT: cvt.rn.bf16x2.f32 %r{{[0-9]+}}, [[HIGHF]], [[LOWF]];
// CHECK:      mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK:      fma.rn.f32
func.func @linear_quantized(%x: tensor<16x256xbf16>) -> tensor<16x64xbf16> {
  %v = llmserve.weight "w" quantized int4_group128 values from gptq : tensor<128x256xi4>
  %s = llmserve.weight "w" quantized int4_group128 scales from gptq : tensor<128x2xf32>
  %z = llmserve.weight "w" quantized int4_group128 zeros from gptq : tensor<128x2xi8>
  %y = llmserve.linear %x, %v scales %s zeros %z : tensor<16x256xbf16>, tensor<128x256xi4> -> tensor<16x128xbf16>
  %v8 = llmserve.weight "u" quantized int8_channel values : tensor<256x128xi8>
  %s8 = llmserve.weight "u" quantized int8_channel scales : tensor<256xf32>
  %u = llmserve.linear %y, %v8 scales %s8 : tensor<16x128xbf16>, tensor<256x128xi8> -> tensor<16x256xbf16>
  %o = llmserve.linear %u, %v scales %s zeros %z : tensor<16x256xbf16>, tensor<128x256xi4> -> tensor<16x128xbf16>
  %v8f = llmserve.weight "f" quantized fp8_block128 values from fp8_block128 : tensor<64x128xf8E4M3FN>
  %s8f = llmserve.weight "f" quantized fp8_block128 scales from fp8_block128 : tensor<1x1xf32>
  %f = llmserve.linear %o, %v8f scales %s8f : tensor<16x128xbf16>, tensor<64x128xf8E4M3FN> -> tensor<16x64xbf16>
  return %f : tensor<16x64xbf16>
}

// W8A8: the quantization's scale is the group's largest magnitude (a
// butterfly of max.f32) over 448 by an IEEE division, as is each element
// over it; the linear reads x's codes and W's as 32-bit words of 4 codes
// into mma.sync m16n8k32 e4m3, and folds each group's sums in times the
// product of the two scales.
// CHECK-LABEL: .visible .entry llmserve_d18_quantize_fp8(
// CHECK:      shfl.sync.bfly.b32 [[PEER:%r[0-9]+]], [[MINE:%r[0-9]+]], 1, 31, -1;
// CHECK-NEXT: max.NaN.f32 [[LARGEST:%r[0-9]+]], [[MINE]], [[PEER]];
// CHECK-NEXT: max.NaN.f32 [[FLOORED:%r[0-9]+]], [[LARGEST]], 0f2EDBE6FF;
// CHECK-NEXT: div.rn.f32 [[SCALE:%r[0-9]+]], [[FLOORED]], 0f43E00000;
// CHECK-NEXT: div.rn.f32 %r{{[0-9]+}}, %r{{[0-9]+}}, [[SCALE]];
// CHECK:      st.global.b8
// CHECK:      st.global.b32 [%rd{{[0-9]+}}], [[SCALE]];
// CHECK-LABEL: .visible .entry llmserve_d19_linear_small_m(
// CHECK:      ld.shared.b32 [[A0:%r[0-9]+]], [[[ROW:%rd[0-9]+]]];
// CHECK-NEXT: ld.shared.b32 [[A1:%r[0-9]+]], [[[ROW8:%rd[0-9]+]]];
// CHECK-NEXT: ld.shared.b32 [[A2:%r[0-9]+]], [[[ROW]]+16];
// CHECK-NEXT: ld.shared.b32 [[A3:%r[0-9]+]], [[[ROW8]]+16];
// CHECK-NEXT: ld.shared.b32 [[B0:%r[0-9]+]], [[[COL:%rd[0-9]+]]];
// CHECK-NEXT: ld.shared.b32 [[B1:%r[0-9]+]], [[[COL]]+16];
// CHECK:      mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32
// CHECK-NEXT:   {{{.*}}},
// CHECK-NEXT:   {[[A0]], [[A1]], [[A2]], [[A3]]},
// CHECK-NEXT:   {[[B0]], [[B1]]},
// CHECK:      mul.rn.f32 [[BOTH:%r[0-9]+]],
// CHECK-NEXT: fma.rn.f32 %r{{[0-9]+}}, %r{{[0-9]+}}, [[BOTH]],
func.func @linear_w8a8(%x: tensor<16x256xbf16>) -> tensor<16x128xbf16> {
  %v = llmserve.weight "w" quantized fp8_block128 values from fp8_block128 : tensor<128x256xf8E4M3FN>
  %s = llmserve.weight "w" quantized fp8_block128 scales from fp8_block128 : tensor<1x2xf32>
  %c, %cs = llmserve.quantize_fp8 %x : tensor<16x256xbf16> -> tensor<16x256xf8E4M3FN>
  %y = llmserve.linear %c input_scales %cs, %v scales %s : tensor<16x256xf8E4M3FN>, tensor<128x256xf8E4M3FN> -> tensor<16x128xbf16>
  return %y : tensor<16x128xbf16>
}

// Sibling linears (llmserve-group-sibling-linears) are one kernel per step
// size: a block picks its linear by its column tile (%ctaid.y; q has 8
// tiles of 16 columns), and each linear's branch waits for the grids before
// it and multiplies on the tensor cores.
// CHECK-LABEL: .visible .entry llmserve_d20_dispatch_region_small_m(
// CHECK:       mov.u32 %r[[Y:[0-9]+]], %ctaid.y;
// CHECK:       setp.gt.u32 %p{{[0-9]+}}, %r[[Y]], 7;
// CHECK:       griddepcontrol.wait;
// CHECK:       mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK:       griddepcontrol.wait;
// CHECK:       mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-LABEL: .visible .entry llmserve_d20_dispatch_region_medium_m(
func.func @sibling_linears(%x: tensor<16x64xbf16>) -> (tensor<16x128xbf16>, tensor<16x32xbf16>) {
  %wq = llmserve.weight "sibling.q" : tensor<128x64xbf16>
  %q = llmserve.linear %x, %wq : tensor<16x64xbf16>, tensor<128x64xbf16> -> tensor<16x128xbf16>
  %wk = llmserve.weight "sibling.k" : tensor<32x64xbf16>
  %k = llmserve.linear %x, %wk : tensor<16x64xbf16>, tensor<32x64xbf16> -> tensor<16x32xbf16>
  return %q, %k : tensor<16x128xbf16>, tensor<16x32xbf16>
}

// A layer's ropes and its writes into FP8 caches are one kernel
// (llmserve-group-sibling-ropes, -kv-writes), bound to q, the positions, k,
// both caches, the slots, v and the rotated q. q's rotated row is stored
// as bf16. Each rotated key is rounded to bf16, as its rope would store it,
// then scaled (/0.5: x2) and rounded to an e4m3 code, a byte a store, and
// never stored as bf16; then v's row is encoded (/0.25: x4).
// CHECK-LABEL: .visible .entry llmserve_d{{[0-9]+}}_dispatch_region(
// CHECK-COUNT-8: .param .u64 .ptr .align 1 llmserve_d{{[0-9]+}}_dispatch_region_param_{{[0-9]+}},
// CHECK-NEXT: .param .u64 llmserve_d{{[0-9]+}}_dispatch_region_param_8,
// CHECK:      st.global.b16
// CHECK:      st.global.b16
// CHECK-NOT:  st.global.b16
// CHECK:      cvt.rn.bf16.f32 [[KEY:%rs[0-9]+]], %r{{[0-9]+}};
// CHECK-NEXT: cvt.f32.bf16 [[WIDE:%r[0-9]+]], [[KEY]];
// CHECK-NEXT: add.rn.f32 %r{{[0-9]+}}, [[WIDE]], [[WIDE]];
// CHECK-NOT:  st.global.b16
// CHECK:      st.global.b8
// CHECK-NOT:  st.global.b16
// CHECK:      ld.global.b16 [[V:%rs[0-9]+]], [%rd{{[0-9]+}}];
// CHECK-NEXT: cvt.f32.bf16 [[VW:%r[0-9]+]], [[V]];
// CHECK-NEXT: mul.rn.f32 %r{{[0-9]+}}, [[VW]], 0f40800000;
// CHECK-NOT:  st.global.b16
// CHECK:      st.global.b8
// CHECK-NOT:  st.global.b16
// CHECK:      ret;
func.func @rope_kv_write_fp8(%kc: tensor<?x16x2x32xf8E4M3FN> {llmserve.kv_cache = {layer = 0 : i64, role = "k"}}, %vc: tensor<?x16x2x32xf8E4M3FN> {llmserve.kv_cache = {layer = 0 : i64, role = "v"}}, %bt: tensor<?x?xi32> {llmserve.contract = "block_table"}, %cl: tensor<?xi32> {llmserve.contract = "context_len"}, %qs: tensor<?xi32> {llmserve.contract = "query_start"}, %slots: tensor<?xi32> {llmserve.contract = "slot_mapping"}, %pos: tensor<?xi32> {llmserve.contract = "positions"}, %ids: tensor<?xi32> {llmserve.contract = "token_ids"}) -> tensor<?x128xbf16> {
  %eq = llmserve.weight "emb_q" : tensor<100x128xbf16>
  %ek = llmserve.weight "emb_k" : tensor<100x64xbf16>
  %ev = llmserve.weight "emb_v" : tensor<100x64xbf16>
  %q = llmserve.embedding %eq, %ids : tensor<100x128xbf16>, tensor<?xi32> -> tensor<?x128xbf16>
  %k = llmserve.embedding %ek, %ids : tensor<100x64xbf16>, tensor<?xi32> -> tensor<?x64xbf16>
  %v = llmserve.embedding %ev, %ids : tensor<100x64xbf16>, tensor<?xi32> -> tensor<?x64xbf16>
  %rq = llmserve.rope %q, %pos style neox head_dim 32 rotary_dim 32 theta 1.000000e+04 : tensor<?x128xbf16>, tensor<?xi32>
  %rk = llmserve.rope %k, %pos style neox head_dim 32 rotary_dim 32 theta 1.000000e+04 : tensor<?x64xbf16>, tensor<?xi32>
  %kc1 = llmserve.kv_write %rk into %kc at %slots scale [0.5] : tensor<?x64xbf16>, tensor<?x16x2x32xf8E4M3FN>, tensor<?xi32>
  %vc1 = llmserve.kv_write %v into %vc at %slots scale [0.25] : tensor<?x64xbf16>, tensor<?x16x2x32xf8E4M3FN>, tensor<?xi32>
  %o, %lse = llmserve.paged_attention %rq, %kc1, %vc1 block_table %bt context_len %cl query_start %qs num_heads 4 scale 0.17677669 kv_scales [0.5], [0.25] : tensor<?x128xbf16>, tensor<?x16x2x32xf8E4M3FN>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4xf32>
  return %o : tensor<?x128xbf16>
}
