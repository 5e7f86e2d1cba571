// RUN: %llmserve-opt %s -llmserve-to-gpu-kernels -split-input-file | FileCheck %s

// A bf16 linear runs on tensor cores: blocks of 4 warps compute 64x64 tiles
// (grid: row tiles x column tiles); x and W stream through 4 shared-memory
// stages of 32 k (rows padded to 40 elements) by 16-byte cp.async copies
// (K % 8 == 0), 3 commit groups ahead of mma.sync m16n8k16 with f32
// accumulators. The first steps' W copies start before the kernel waits
// for the grids before it.
// Parameters: one bare pointer (memref<1xT>) per binding, then one i64 per
// push constant (x's rows, y's rows). Two more kernels, for steps of at most
// 16 and of 17 to 64 rows, bind the same buffers; the grids leave exactly
// one of the three with blocks.
// CHECK-LABEL: func.func @linear
//       CHECK:   llmserve.linear
//  CHECK-SAME:     llmserve.dispatch = [{block = array<i64: 128, 1, 1>, grid = ["ceildiv($0,64)*min(max($0-64,0),1)", "2", "1"], kernel = "d0_linear", programmatic_launch = true, shared_bytes = 0 : i64, symbol = "llmserve_d0_linear"},
//  CHECK-SAME:                          {block = array<i64: 64, 1, 1>, grid = ["ceildiv($0,16)*(1-min(max($0-16,0),1))", "8", "1"], kernel = "d0_linear_small_m", programmatic_launch = true, shared_bytes = 0 : i64, symbol = "llmserve_d0_linear_small_m"},
//  CHECK-SAME:                          {block = array<i64: 128, 1, 1>, grid = ["ceildiv($0,64)*min(max($0-16,0),1)*(1-min(max($0-64,0),1))", "4", "1"], kernel = "d0_linear_medium_m", programmatic_launch = true, shared_bytes = 0 : i64, symbol = "llmserve_d0_linear_medium_m"}]
//       CHECK: gpu.module @kernels [#nvvm.target<O = 3, chip = "sm_90", features = "+ptx84">]
//       CHECK:   gpu.func @llmserve_d0_linear(%{{.*}}: memref<1xbf16>, %{{.*}}: memref<1xbf16>, %{{.*}}: memref<1xbf16>, %{{.*}}: i64, %{{.*}}: i64)
//  CHECK-SAME:     workgroup(%{{.*}} : memref<4x64x40xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<4x64x40xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
//  CHECK-SAME:     kernel attributes {known_block_size = array<i32: 128, 1, 1>}
//       CHECK:     memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [%{{.*}}, 32], strides: [32, 1] : memref<1xbf16> to memref<?x32xbf16, strided<[32, 1]>>
//       CHECK:     nvgpu.device_async_copy %{{.*}}, 8, %{{.*}} {bypassL1} : memref<128x32xbf16, strided<[32, 1]>> to memref<4x64x40xbf16, #gpu.address_space<workgroup>>
//       CHECK:     nvvm.griddepcontrol  wait
//  CHECK-NEXT:     nvvm.griddepcontrol  launch_dependents
//       CHECK:     nvgpu.device_async_copy %{{.*}}, 8, %{{.*}} {bypassL1} : memref<?x32xbf16, strided<[32, 1]>> to memref<4x64x40xbf16, #gpu.address_space<workgroup>>
//       CHECK:     nvvm.cp.async.commit.group
//  CHECK-NEXT:     nvvm.cp.async.commit.group
//  CHECK-NEXT:     nvvm.cp.async.commit.group
//       CHECK:     scf.for {{.*}} -> (f32, f32
//  CHECK-NEXT:       nvvm.cp.async.wait.group 2
//  CHECK-NEXT:       gpu.barrier
//       CHECK:       nvvm.cp.async.commit.group
//       CHECK:       vector.load %{{.*}} : memref<4x64x40xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
//       CHECK:       nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
//       CHECK:     arith.truncf %{{.*}} : f32 to bf16
// The small-M kernel: 2 warps on a 16x16 tile (row tiles on grid x, column
// tiles on y); x and W stream through 4 shared-memory stages of 128 k (rows
// padded to 136 elements) by 16-byte cp.async copies, 3 commit groups ahead
// of the mma. K = 32 is one step: one split, no cluster. The first steps' W
// copies start before the kernel waits for the grids before it; x's after.
//       CHECK:   gpu.func @llmserve_d0_linear_small_m(%{{.*}}: memref<1xbf16>, %{{.*}}: memref<1xbf16>, %{{.*}}: memref<1xbf16>, %{{.*}}: i64, %{{.*}}: i64)
//  CHECK-SAME:     workgroup(%{{.*}} : memref<4x16x136xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<4x16x136xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
//  CHECK-SAME:     kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
//       CHECK:     nvgpu.device_async_copy %{{.*}}, 8, %{{.*}} {bypassL1} : memref<128x32xbf16, strided<[32, 1]>> to memref<4x16x136xbf16, #gpu.address_space<workgroup>>
//       CHECK:     nvvm.griddepcontrol  wait
//  CHECK-NEXT:     nvvm.griddepcontrol  launch_dependents
//       CHECK:     nvgpu.device_async_copy %{{.*}}, 8, %{{.*}} {bypassL1} : memref<?x32xbf16, strided<[32, 1]>> to memref<4x16x136xbf16, #gpu.address_space<workgroup>>
//       CHECK:     nvvm.cp.async.commit.group
//  CHECK-NEXT:     nvvm.cp.async.commit.group
//  CHECK-NEXT:     nvvm.cp.async.commit.group
//       CHECK:     scf.for {{.*}} -> (f32, f32, f32, f32)
//  CHECK-NEXT:       nvvm.cp.async.wait.group 2
//  CHECK-NEXT:       gpu.barrier
//       CHECK:       nvvm.cp.async.commit.group
//       CHECK:       nvvm.mma.sync
//       CHECK:     nvvm.cp.async.wait.group 0
//       CHECK:     arith.truncf %{{.*}} : f32 to bf16
// The kernel for 17 to 64 rows: 4 warps on a 64x32 tile, a warp per 16 rows
// and 4 m16n8 tiles, so that a block reads its W columns once for all rows;
// 3 stages of 64 k (rows padded to 72 elements), 2 commit groups ahead.
//       CHECK:   gpu.func @llmserve_d0_linear_medium_m(%{{.*}}: memref<1xbf16>, %{{.*}}: memref<1xbf16>, %{{.*}}: memref<1xbf16>, %{{.*}}: i64, %{{.*}}: i64)
//  CHECK-SAME:     workgroup(%{{.*}} : memref<3x64x72xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<3x32x72xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
//  CHECK-SAME:     kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
//       CHECK:     nvgpu.device_async_copy %{{.*}}, 8, %{{.*}} {bypassL1} : memref<128x32xbf16, strided<[32, 1]>> to memref<3x32x72xbf16, #gpu.address_space<workgroup>>
//       CHECK:     nvvm.griddepcontrol  wait
//       CHECK:     nvvm.cp.async.commit.group
//       CHECK:     nvvm.cp.async.commit.group
//       CHECK:     scf.for {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
//  CHECK-NEXT:       nvvm.cp.async.wait.group 1
//  CHECK-NEXT:       gpu.barrier
// CHECK-COUNT-4:     nvvm.mma.sync
//       CHECK:     nvvm.cp.async.wait.group 0
//       CHECK:     arith.truncf %{{.*}} : f32 to bf16
func.func @linear(%x: tensor<?x32xbf16>) -> tensor<?x128xbf16> {
  %w = llmserve.weight "w" : tensor<128x32xbf16>
  %y = llmserve.linear %x, %w : tensor<?x32xbf16>, tensor<128x32xbf16> -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}

// -----

// K is split so that the 16-row kernel has about 512 blocks per row tile:
// 16 column tiles of a 256-row weight give 8 splits (the most a portable
// cluster holds) of 2 steps of 128 k. The splits of a tile are one cluster
// along grid z, in every kernel; each block leaves its sums in shared memory
// and the first adds them in split order through distributed shared memory.
// The large-tile kernel's block walks its split's 8 steps of 32 k.
// CHECK-LABEL: func.func @linear_split_k
//       CHECK:   llmserve.linear
//  CHECK-SAME:     grid = ["ceildiv($0,64)*min(max($0-64,0),1)", "4", "8"], kernel = "d0_linear"
//  CHECK-SAME:     grid = ["ceildiv($0,16)*(1-min(max($0-16,0),1))", "16", "8"], kernel = "d0_linear_small_m"
//  CHECK-SAME:     grid = ["ceildiv($0,64)*min(max($0-16,0),1)*(1-min(max($0-64,0),1))", "8", "8"], kernel = "d0_linear_medium_m"
//       CHECK:   gpu.func @llmserve_d0_linear(
//  CHECK-SAME:     kernel attributes {known_block_size = array<i32: 128, 1, 1>, nvvm.cluster_dim = array<i32: 1, 1, 8>}
//       CHECK:     %[[SPLIT:.*]] = gpu.block_id  z
//       CHECK:     %[[FIRST:.*]] = arith.muli %[[SPLIT]], %{{c8[_0-9]*}}
//       CHECK:     %[[LEFT:.*]] = arith.subi %{{c64[_0-9]*}}, %[[FIRST]]
//       CHECK:     %[[COUNT:.*]] = arith.minsi %{{c8[_0-9]*}}, %[[LEFT]]
//       CHECK:     scf.for %{{.*}} = %{{.*}} to %[[COUNT]] step %{{.*}} iter_args
//       CHECK:       nvvm.mma.sync
// CHECK-COUNT-8:   llvm.store %{{.*}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<3>
//  CHECK-NEXT:     nvvm.cluster.arrive {aligned}
//  CHECK-NEXT:     nvvm.cluster.wait {aligned}
//       CHECK:     scf.if
// CHECK-COUNT-64:    nvvm.mapa
//       CHECK:     nvvm.cluster.arrive {aligned}
//  CHECK-NEXT:     nvvm.cluster.wait {aligned}
//  CHECK-NEXT:     gpu.return
// Each block's sums go to the x stages it no longer reads once every warp
// is past them, a quad of f32 per thread and tile.
//       CHECK:   gpu.func @llmserve_d0_linear_small_m(
//  CHECK-SAME:     kernel attributes {known_block_size = array<i32: 64, 1, 1>, nvvm.cluster_dim = array<i32: 1, 1, 8>}
//       CHECK:     gpu.block_id  z
//       CHECK:     nvvm.mma.sync
//       CHECK:     memref.extract_aligned_pointer_as_index %{{.*}} : memref<4x16x136xbf16, #gpu.address_space<workgroup>>
//       CHECK:     gpu.barrier
//       CHECK:     llvm.store %{{.*}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<3>
//  CHECK-NEXT:     nvvm.cluster.arrive {aligned}
//  CHECK-NEXT:     nvvm.cluster.wait {aligned}
//       CHECK:     scf.if
// CHECK-COUNT-8:     nvvm.mapa
//       CHECK:     nvvm.cluster.arrive {aligned}
//  CHECK-NEXT:     nvvm.cluster.wait {aligned}
//  CHECK-NEXT:     gpu.return
//       CHECK:   gpu.func @llmserve_d0_linear_medium_m(
//  CHECK-SAME:     kernel attributes {known_block_size = array<i32: 128, 1, 1>, nvvm.cluster_dim = array<i32: 1, 1, 8>}
//       CHECK:     gpu.barrier
// CHECK-COUNT-4:   llvm.store %{{.*}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<3>
//  CHECK-NEXT:     nvvm.cluster.arrive {aligned}
//  CHECK-NEXT:     nvvm.cluster.wait {aligned}
//       CHECK:     scf.if
// CHECK-COUNT-32:    nvvm.mapa
//       CHECK:     nvvm.cluster.arrive {aligned}
//  CHECK-NEXT:     nvvm.cluster.wait {aligned}
//  CHECK-NEXT:     gpu.return
func.func @linear_split_k(%x: tensor<?x2048xbf16>) -> tensor<?x256xbf16> {
  %w = llmserve.weight "w" : tensor<256x2048xbf16>
  %y = llmserve.linear %x, %w : tensor<?x2048xbf16>, tensor<256x2048xbf16> -> tensor<?x256xbf16>
  return %y : tensor<?x256xbf16>
}

// -----

// f16 operands are passed to mma.sync as vector<2xf16>; the logits of a
// narrow model come out in f32 (no truncation). K % 8 != 0: x and W are
// copied into the stages one element at a time, zero past K, and the kernel
// waits for the grids before it on entry.
// CHECK-LABEL: func.func @linear_f16_logits
//       CHECK: gpu.func @llmserve_d0_linear(%{{.*}}: memref<1xf16>, %{{.*}}: memref<1xf16>, %{{.*}}: memref<1xf16>, %{{.*}}: memref<1xf32>, %{{.*}}: i64, %{{.*}}: i64)
//  CHECK-NEXT:   nvvm.griddepcontrol  wait
//   CHECK-NOT:   nvgpu.device_async_copy
//       CHECK:   memref.store %{{.*}} : memref<4x64x40xf16, #gpu.address_space<workgroup>>
//       CHECK:   llvm.bitcast %{{.*}} : i32 to vector<2xf16>
//       CHECK:   nvvm.mma.sync {{.*}} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
//   CHECK-NOT:   arith.truncf
//       CHECK:   gpu.return
func.func @linear_f16_logits(%x: tensor<?x36xf16>, %b: tensor<100xf16>) -> tensor<?x100xf32> {
  %w = llmserve.weight "w" : tensor<100x36xf16>
  %y = llmserve.linear %x, %w bias %b : tensor<?x36xf16>, tensor<100x36xf16>, tensor<100xf16> -> tensor<?x100xf32>
  return %y : tensor<?x100xf32>
}

// -----

// f32 storage: one warp per output, lanes striding over K, a butterfly sum;
// columns on grid x (any vocabulary fits), rows on y.
// CHECK-LABEL: func.func @linear_f32
//       CHECK:   llmserve.linear
//  CHECK-SAME:     grid = ["32", "$0", "1"]
//       CHECK: gpu.func @llmserve_d0_linear
//       CHECK:   scf.for
//       CHECK:   gpu.shuffle  xor %{{.*}}, %{{.*}}, %{{.*}} : f32
//   CHECK-NOT:   nvvm.mma.sync
func.func @linear_f32(%x: tensor<?x32xf32>, %w: tensor<128x32xf32>) -> tensor<?x128xf32> {
  %y = llmserve.linear %x, %w : tensor<?x32xf32>, tensor<128x32xf32> -> tensor<?x128xf32>
  return %y : tensor<?x128xf32>
}

// -----

// A norm takes one block of 256 threads per row: the residual is added and
// stored, the sum of squares goes through warp butterflies and a shared
// buffer of one partial sum per warp, in warp order.
// CHECK-LABEL: func.func @rms_norm
//       CHECK:   llmserve.rms_norm
//  CHECK-SAME:     block = array<i64: 256, 1, 1>, grid = ["$0", "1", "1"]
//       CHECK: gpu.func @llmserve_d0_rms_norm
//  CHECK-SAME:     workgroup(%[[SCRATCH:.*]] : memref<8xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
//       CHECK:   scf.for
//       CHECK:     arith.extf %{{.*}} : bf16 to f32
//       CHECK:     arith.truncf %{{.*}} : f32 to bf16
//   CHECK-COUNT-5:   gpu.shuffle  xor
//       CHECK:   memref.store %{{.*}}, %[[SCRATCH]]
//       CHECK:   gpu.barrier
//   CHECK-COUNT-8:   memref.load %[[SCRATCH]]
//       CHECK:   gpu.barrier
//       CHECK:   math.rsqrt
func.func @rms_norm(%x: tensor<?x64xbf16>, %r: tensor<?x64xbf16>, %w: tensor<64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  %y, %s = llmserve.rms_norm %x, %w residual %r epsilon 1.0e-05 : tensor<?x64xbf16>, tensor<64xbf16>, tensor<?x64xbf16>
  return %y, %s : tensor<?x64xbf16>, tensor<?x64xbf16>
}

// -----

// A per-head norm (a weight of 16 for rows of 64) takes a block per head:
// the rows are read as [T * 4, 16].
// CHECK-LABEL: func.func @rms_norm_per_head
//       CHECK:   llmserve.rms_norm
//  CHECK-SAME:     grid = ["$0*4", "1", "1"]
//       CHECK: gpu.func @llmserve_d0_rms_norm
//       CHECK:   %[[ROWS:.+]] = arith.muli %{{.+}}, %c4
//       CHECK:   memref.reinterpret_cast %{{.+}} to offset: [0], sizes: [%[[ROWS]], 16], strides: [16, 1]
func.func @rms_norm_per_head(%q: tensor<?x64xbf16>, %w: tensor<16xbf16>) -> tensor<?x64xbf16> {
  %y = llmserve.rms_norm %q, %w epsilon 1.0e-06 : tensor<?x64xbf16>, tensor<16xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// Attention: tiles of rows of one sequence and one KV head; with 4 query
// heads per KV head (GQA) a tile holds 4 rows, so the grid is
// ceil(T/4) + S tiles by 2 KV heads, none when T = S. Each item's q waits in
// a shared f32 tile. Keys go in chunks of 64, each gathered at once through
// the block table into shared memory (K rows padded by 16 bytes) between
// barriers, then folded in tiles of 32 keys at multiples of 32. A lane scores one key
// (an fma chain over 16-byte pieces of its K row and the broadcast q), the
// warp reduces the tile's maximum and weight sum, and the lanes' output
// elements take the weighted V rows key by key (weights broadcast by an idx
// shuffle); each tile folds into the total with fma. A decode-only step
// runs a block per (sequence, KV head, chunk of the longest addressable
// context) writing chunk states ([S, 8 heads, chunks, 2 + 16]) to the
// scratch binding, then one warp per (sequence, head) folds them.
// CHECK-LABEL: func.func @attention
//       CHECK:   llmserve.paged_attention
//  CHECK-SAME:     llmserve.dispatch = [{block = array<i64: 128, 1, 1>, grid = ["(ceildiv($0,4)+$5)*min($0-$5,1)", "2", "1"], kernel = "d0_paged_attention"
//  CHECK-SAME:       {block = array<i64: 128, 1, 1>, grid = ["$5*(1-min($0-$5,1))", "2", "ceildiv($4*4,64)"], kernel = "d0_paged_attention_decode"
//  CHECK-SAME:       {block = array<i64: 32, 1, 1>, grid = ["$5*(1-min($0-$5,1))", "8", "1"], kernel = "d0_paged_attention_merge"
//  CHECK-SAME:     llmserve.scratch = {{\[}}["$5", "8", "ceildiv($4*4,64)", "18"]]
//       CHECK: gpu.func @llmserve_d0_paged_attention(
//  CHECK-SAME:     %{{[^:]*}}: memref<1xf32>, %{{[^:]*}}: memref<1xf32>, %{{[^:]*}}: i64
//  CHECK-SAME:     workgroup(%[[K:.*]] : memref<64x24xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[V:.*]] : memref<64x16xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[Q:.*]] : memref<16x16xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
//       CHECK:   scf.for
//       CHECK:   scf.if
//       CHECK:     memref.store %{{.*}}, %[[Q]]
//       CHECK:     scf.for
//       CHECK:       scf.for
//       CHECK:         gpu.barrier
//       CHECK:         vector.load %{{.*}} {alignment = 16 : i64} : memref<?x?xbf16, strided<[?, 1]>>, vector<8xbf16>
//       CHECK:         vector.store %{{.*}}, %[[K]]{{.*}} {alignment = 16 : i64} : memref<64x24xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
//       CHECK:         vector.store %{{.*}}, %[[V]]
//       CHECK:         gpu.barrier
//       CHECK:         scf.for
//       CHECK:           vector.load %[[K]]
//       CHECK:           vector.load %[[Q]]
//       CHECK:           math.fma
//       CHECK:         gpu.shuffle  xor
//       CHECK:         arith.maximumf
//       CHECK:         math.exp
//       CHECK:         gpu.shuffle  xor
//       CHECK:         scf.for
//       CHECK:           memref.load %[[V]]
//       CHECK:           gpu.shuffle  idx
//       CHECK:           math.fma
//       CHECK:         math.fma
//       CHECK:       math.fma
//       CHECK:     math.log
//       CHECK: gpu.func @llmserve_d0_paged_attention_decode(
//  CHECK-SAME:     %[[DSCRATCH:[^:]*]]: memref<1xf32>, %{{[^:]*}}: i64
//  CHECK-SAME:     workgroup({{.*}}, %{{.*}} : memref<4x16xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
//       CHECK:   scf.if
//       CHECK:     scf.for
//       CHECK:       gpu.barrier
//       CHECK:       gpu.shuffle  xor
//       CHECK:       gpu.shuffle  idx
//       CHECK:     %[[PARTIALS:.*]] = memref.reinterpret_cast %[[DSCRATCH]]
//       CHECK:     memref.store %{{.*}}, %[[PARTIALS]]
//   CHECK-NOT:     math.log
//       CHECK: gpu.func @llmserve_d0_paged_attention_merge(
//  CHECK-SAME:     known_block_size = array<i32: 32, 1, 1>
//       CHECK:   scf.for
//       CHECK:     memref.load
//       CHECK:     math.fma
//       CHECK:   math.log
func.func @attention(%q: tensor<?x128xbf16>, %kc: tensor<?x4x2x16xbf16>, %vc: tensor<?x4x2x16xbf16>, %bt: tensor<?x?xi32>, %cl: tensor<?xi32>, %qs: tensor<?xi32>) -> (tensor<?x128xbf16>, tensor<?x8xf32>) {
  %o, %lse = llmserve.paged_attention %q, %kc, %vc block_table %bt context_len %cl query_start %qs num_heads 8 scale 2.500000e-01 : tensor<?x128xbf16>, tensor<?x4x2x16xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return %o, %lse : tensor<?x128xbf16>, tensor<?x8xf32>
}

// -----

// rope: one thread per rotated pair; the angle is reduced by pi/2 (floor,
// three fma) before sin and cos.
// CHECK-LABEL: func.func @rope
//       CHECK: memref.global "private" constant @llmserve_d0_rope_inv_freq : memref<8xf32>
//       CHECK: gpu.func @llmserve_d0_rope
//       CHECK:   math.floor
//   CHECK-COUNT-3:   math.fma
//       CHECK:   math.sin
//       CHECK:   math.cos
func.func @rope(%x: tensor<?x32xf16>, %pos: tensor<?xi32>) -> tensor<?x32xf16> {
  %y = llmserve.rope %x, %pos style gptj head_dim 16 rotary_dim 16 theta 1.0e+04 : tensor<?x32xf16>, tensor<?xi32>
  return %y : tensor<?x32xf16>
}

// -----

// longrope: the block's token finds its sequence in query_start before the
// threads take their pairs; a sequence longer than original_max_position
// (16) reads the table's long half, and cos and sin are scaled by
// attention_factor. Bindings: the input, positions, context_len,
// query_start, then the result.
// CHECK-LABEL: func.func @rope_longrope
//       CHECK:   llmserve.rope
//  CHECK-SAME:     grid = ["$0", "1", "1"], kernel = "d0_rope"
//       CHECK: memref.global "private" constant @llmserve_d0_rope_inv_freq : memref<4xf32> = dense<[1.000000e+00, 5.000000e-03, 5.000000e-01, 6.250000e-04]>
//       CHECK: gpu.func @llmserve_d0_rope(%{{.*}}: memref<1xbf16>, %{{.*}}: memref<1xi32>, %{{.*}}: memref<1xi32>, %{{.*}}: memref<1xi32>, %{{.*}}: memref<1xbf16>,
//       CHECK:   %[[ROW:.*]] = gpu.block_id x
//       CHECK:   scf.for {{.*}} iter_args({{.*}}) -> (index) {
//       CHECK:     arith.cmpi ule, %{{.*}}, %[[ROW]] : index
//       CHECK:   %[[LONG:.*]] = arith.cmpi sgt, %{{.*}}, %c16 : index
//       CHECK:   %[[OFFSET:.*]] = arith.select %[[LONG]], %c2, %{{.*}} : index
//       CHECK:   gpu.thread_id x
//       CHECK:   scf.for
//       CHECK:     arith.addi %[[OFFSET]], %{{.*}} : index
//       CHECK:     math.sin
//       CHECK:     math.cos
//       CHECK:     %[[FACTOR:.*]] = arith.constant 1.250000e+00 : f32
//       CHECK:     arith.mulf %{{.*}}, %[[FACTOR]] : f32
//       CHECK:     arith.mulf %{{.*}}, %[[FACTOR]] : f32
func.func @rope_longrope(%x: tensor<?x48xbf16>, %pos: tensor<?xi32>, %cl: tensor<?xi32>, %qs: tensor<?xi32>) -> tensor<?x48xbf16> {
  %r = llmserve.rope %x, %pos context_len %cl query_start %qs style neox head_dim 16 rotary_dim 4 theta 1.0e4 scaling longrope original_max_position 16 short_factor dense<[1.0, 2.0]> : tensor<2xf32> long_factor dense<[2.0, 16.0]> : tensor<2xf32> attention_factor 1.25 : tensor<?x48xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  return %r : tensor<?x48xbf16>
}

// -----

// kv_write binds its cache once and writes through a [slots, width] view.
// CHECK-LABEL: func.func @kv_write
//       CHECK:   llmserve.kv_write
//  CHECK-SAME:     grid = ["$0", "1", "1"]
//       CHECK: gpu.func @llmserve_d0_kv_write(%{{.*}}: memref<1xbf16>, %{{.*}}: memref<1xbf16>, %{{.*}}: memref<1xi32>, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64)
//       CHECK:   scf.if
//       CHECK:     memref.store %{{.*}} : memref<?x?xbf16
func.func @kv_write(%k: tensor<?x32xbf16>, %cache: tensor<?x4x2x16xbf16>, %slots: tensor<?xi32>) -> tensor<?x4x2x16xbf16> {
  %c = llmserve.kv_write %k into %cache at %slots : tensor<?x32xbf16>, tensor<?x4x2x16xbf16>, tensor<?xi32>
  return %c : tensor<?x4x2x16xbf16>
}

// -----

// Elementwise kernels: 4 elements per thread, 1024 per block.
// CHECK-LABEL: func.func @silu_mul
//       CHECK:   llmserve.silu_mul
//  CHECK-SAME:     grid = ["ceildiv($0*64,1024)", "1", "1"]
func.func @silu_mul(%g: tensor<?x64xbf16>, %u: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %y = llmserve.silu_mul %g, %u : tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// GeGLU: gelu(gate) * up, element by element like silu_mul.
// CHECK-LABEL: func.func @gelu_mul
//       CHECK:   llmserve.gelu_mul
//  CHECK-SAME:     grid = ["ceildiv($0*64,1024)", "1", "1"]
//       CHECK: gpu.func @llmserve_d0_gelu_mul
//       CHECK:   math.tanh
//       CHECK:   arith.mulf
func.func @gelu_mul(%g: tensor<?x64xbf16>, %u: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %y = llmserve.gelu_mul %g, %u approximation tanh : tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// Logit soft-capping: cap * tanh(x / cap), element by element.
// CHECK-LABEL: func.func @softcap
//       CHECK: gpu.func @llmserve_d0_softcap
//       CHECK:   arith.divf %{{.*}}, %[[CAP:.*]] : f32
//       CHECK:   math.tanh
//       CHECK:   arith.mulf %[[CAP]], %{{.*}} : f32
func.func @softcap(%x: tensor<?x100xf32>) -> tensor<?x100xf32> {
  %y = llmserve.softcap %x cap 30.0 : tensor<?x100xf32>
  return %y : tensor<?x100xf32>
}

// -----

// Attention soft-capping bends each score before the online softmax.
// CHECK-LABEL: func.func @attention_softcap
//       CHECK: gpu.func @llmserve_d0_paged_attention
//       CHECK:   gpu.shuffle  xor
//       CHECK:   math.tanh
//       CHECK:   arith.maximumf
func.func @attention_softcap(%q: tensor<?x128xbf16>, %kc: tensor<?x16x2x32xbf16>, %vc: tensor<?x16x2x32xbf16>, %bt: tensor<?x?xi32>, %cl: tensor<?xi32>, %qs: tensor<?xi32>) -> tensor<?x128xbf16> {
  %o, %lse = llmserve.paged_attention %q, %kc, %vc block_table %bt context_len %cl query_start %qs num_heads 4 scale 0.17677669 softcap 50.0
      : tensor<?x128xbf16>, tensor<?x16x2x32xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4xf32>
  return %o : tensor<?x128xbf16>
}

// -----

// A scaled embedding (Gemma) multiplies in f32 and stores bf16.
// CHECK-LABEL: func.func @embedding_scaled
//       CHECK: gpu.func @llmserve_d0_embedding
//       CHECK:   arith.extf %{{.*}} : bf16 to f32
//       CHECK:   arith.mulf %{{.*}}, %{{.*}} : f32
//       CHECK:   arith.truncf %{{.*}} : f32 to bf16
func.func @embedding_scaled(%t: tensor<100x64xbf16>, %ids: tensor<?xi32>) -> tensor<?x64xbf16> {
  %x = llmserve.embedding %t, %ids scale 8.0 : tensor<100x64xbf16>, tensor<?xi32> -> tensor<?x64xbf16>
  return %x : tensor<?x64xbf16>
}

// -----

// The sampler: one block of 16 warps per sequence; each pass over the
// vocabulary reads 4 logits a thread at once (the last index clamped to the
// row, the ones past it folding nothing), in the order of a plain loop;
// block reductions of (value, index) pairs pick the lowest index among equal
// maxima. A top_k or top_p bisection carries (low, high, listed, count),
// reducing its sum and its largest count per thread in separate buffers:
// once no thread has more than 16 logits at or above the low end, each lists
// its own in shared memory (16 x 512 floats), and the passes after read and
// compact the lists. At most 64 registers a thread: two blocks an SM.
// CHECK-LABEL: func.func @sample
//       CHECK:   llmserve.sample
//  CHECK-SAME:     block = array<i64: 512, 1, 1>, grid = ["$0", "1", "1"]
//       CHECK: gpu.func @llmserve_d0_sample
//  CHECK-SAME:     workgroup(%{{.*}} : memref<16xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<16xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<16xi32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[COUNTS:[a-z0-9]+]] : memref<16xi32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[LISTS:[a-z0-9]+]] : memref<8192xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
//  CHECK-SAME:     kernel attributes {known_block_size = array<i32: 512, 1, 1>, nvvm.maxnreg = 64 : i32}
//       CHECK:   %[[LAST:.*]] = arith.subi %{{.*}}, %c1
//       CHECK:   scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %c2048
//       CHECK:     arith.cmpi slt, %[[I]]
//       CHECK:     arith.minsi %[[I]], %[[LAST]]
//       CHECK:     %[[I1:.*]] = arith.addi %[[I]], %c512
//       CHECK:     arith.minsi %[[I1]], %[[LAST]]
//       CHECK:     %[[I2:.*]] = arith.addi %[[I]], %c1024
//       CHECK:     arith.minsi %[[I2]], %[[LAST]]
//       CHECK:     %[[I3:.*]] = arith.addi %[[I]], %c1536
//       CHECK:     arith.minsi %[[I3]], %[[LAST]]
//       CHECK:     scf.yield
//       CHECK:   scf.for {{.*}} iter_args({{.*}}, %[[LISTED:.*]] = %false, %[[COUNT:.*]] = %c0{{.*}}) -> (f32, f32, i1, index)
//       CHECK:     scf.if %[[LISTED]] -> (i32, i32)
//       CHECK:       scf.for %{{.*}} = %c0{{.*}} to %[[COUNT]]
//       CHECK:         memref.load %[[LISTS]]
//       CHECK:     } else {
//       CHECK:       scf.for {{.*}} step %c2048
//       CHECK:     memref.store %{{.*}}, %[[COUNTS]]
//       CHECK:     gpu.barrier
//       CHECK:     scf.if %{{.*}} -> (index)
//       CHECK:       scf.if %[[LISTED]] -> (index)
//       CHECK:         scf.for %{{.*}} = %c0{{.*}} to %[[COUNT]]
//       CHECK:           memref.store %{{.*}}, %[[LISTS]]
//       CHECK:       } else {
//       CHECK:         scf.for {{.*}} step %c512
//       CHECK:           scf.if
//       CHECK:             memref.store %{{.*}}, %[[LISTS]]
//       CHECK:   arith.muli %{{.*}}, %{{.*}} : i64
//       CHECK:   gpu.shuffle  xor %{{.*}} : f32
//       CHECK:   gpu.shuffle  xor %{{.*}} : i32
//       CHECK:   arith.cmpi slt
func.func @sample(%logits: tensor<?x100xf32>, %t: tensor<?xf32>, %p: tensor<?xf32>, %k: tensor<?xi32>, %m: tensor<?xf32>, %seed: tensor<?xi64>, %off: tensor<?xi32>) -> tensor<?xi32> {
  %s = llmserve.sample %logits temperature %t top_p %p top_k %k min_p %m seed %seed rng_offset %off : tensor<?x100xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xf32>, tensor<?xi64>, tensor<?xi32> -> tensor<?xi32>
  return %s : tensor<?xi32>
}

// -----

// adjust_logits: a block per 4096 logits of a sequence's row copies them,
// through its mask row when it has one, waits at a barrier, then its threads
// rewrite the row's entry tokens in its chunk (distinct, so no race).
// CHECK-LABEL: func.func @adjust_logits
//       CHECK:   llmserve.adjust_logits
//  CHECK-SAME:     block = array<i64: 512, 1, 1>, grid = ["$0", "ceildiv(100,4096)", "1"]
//       CHECK: gpu.func @llmserve_d0_adjust_logits
//       CHECK:   %[[CHUNK:.*]] = gpu.block_id  y
//       CHECK:   %[[BEGIN:.*]] = arith.muli %[[CHUNK]], %c4096
//       CHECK:   %[[END:.*]] = arith.minsi %{{.*}}, %{{.*}}
//       CHECK:   scf.if
//       CHECK:     scf.for
//       CHECK:       arith.shrui
//       CHECK:   } else {
//       CHECK:     scf.for
//       CHECK:   gpu.barrier
//       CHECK:   arith.maxsi
//       CHECK:   arith.minsi
//       CHECK:   scf.for
//       CHECK:     arith.cmpi sge, %{{.*}}, %[[BEGIN]]
//       CHECK:     arith.cmpi slt, %{{.*}}, %[[END]]
//       CHECK:     scf.if
//       CHECK:       arith.divf
//       CHECK:       arith.addf
func.func @adjust_logits(%l: tensor<?x100xf32>, %ps: tensor<?xi32>, %pt: tensor<?xi32>, %pc: tensor<?xi32>, %pb: tensor<?xf32>,
                         %pp: tensor<?xf32>, %fp: tensor<?xf32>, %rp: tensor<?xf32>, %mi: tensor<?xi32>, %mw: tensor<?xi32>) -> tensor<?x100xf32> {
  %o = llmserve.adjust_logits %l entries %ps tokens %pt counts %pc bias %pb presence %pp frequency %fp repetition %rp mask_index %mi mask %mw
      : tensor<?x100xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x100xf32>
  return %o : tensor<?x100xf32>
}

// -----

// logprobs: rows that ask get a block-reduced log-sum-exp, then one block
// reduction of (logit, index) pairs per top entry.
// CHECK-LABEL: func.func @logprobs
//       CHECK:   llmserve.logprobs
//  CHECK-SAME:     block = array<i64: 512, 1, 1>, grid = ["$0", "1", "1"]
//       CHECK: gpu.func @llmserve_d0_logprobs
//       CHECK:   scf.if
//       CHECK:     gpu.shuffle  xor %{{.*}} : f32
//       CHECK:     math.log
//       CHECK:     scf.for {{.*}} -> (f32, i32)
//       CHECK:       gpu.shuffle  xor %{{.*}} : i32
func.func @logprobs(%l: tensor<?x100xf32>, %t: tensor<?xi32>, %n: tensor<?xi32>)
    -> (tensor<?xf32>, tensor<?x20xi32>, tensor<?x20xf32>) {
  %lp, %tt, %tl = llmserve.logprobs %l tokens %t num %n
      : tensor<?x100xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?xf32>, tensor<?x20xi32>, tensor<?x20xf32>
  return %lp, %tt, %tl : tensor<?xf32>, tensor<?x20xi32>, tensor<?x20xf32>
}

// -----

// Kernels whose code is the same (the same op on the same shapes, as in a
// model's layers) are one function: the second dispatch keeps its kernel
// name and names the first's symbol. Another width is another function.
// CHECK-LABEL: func.func @same_code
//       CHECK:   llmserve.silu_mul {{.*}}kernel = "d0_silu_mul"{{.*}}symbol = "llmserve_d0_silu_mul"
//       CHECK:   llmserve.silu_mul {{.*}}kernel = "d1_silu_mul"{{.*}}symbol = "llmserve_d0_silu_mul"
//       CHECK:   llmserve.silu_mul {{.*}}kernel = "d2_silu_mul"{{.*}}symbol = "llmserve_d2_silu_mul"
//       CHECK:   gpu.func @llmserve_d0_silu_mul(
//   CHECK-NOT:   gpu.func @llmserve_d1_silu_mul(
//       CHECK:   gpu.func @llmserve_d2_silu_mul(
func.func @same_code(%g: tensor<?x64xbf16>, %u: tensor<?x64xbf16>, %w: tensor<?x32xbf16>) -> (tensor<?x64xbf16>, tensor<?x32xbf16>) {
  %y = llmserve.silu_mul %g, %u : tensor<?x64xbf16>
  %z = llmserve.silu_mul %y, %u : tensor<?x64xbf16>
  %v = llmserve.silu_mul %w, %w : tensor<?x32xbf16>
  return %z, %v : tensor<?x64xbf16>, tensor<?x32xbf16>
}

// -----

// A sparse MLP's three kernels. moe_router: a warp per token, the softmax's
// max and sum and each top-k pick by warp butterflies. expert_linear: a
// block of 4 warps per 8 columns (grid x) of one expert (grid y); thread 0
// lists the expert's pairs in shared memory, then each warp's lanes stride
// along K of the stacked weight viewed as [experts * N, K], 16 bytes of x
// and of each of the warp's 2 columns at a time. moe_combine: a
// block per token.
// CHECK-LABEL: func.func @moe
//       CHECK:   llmserve.moe_router
//  CHECK-SAME:     llmserve.dispatch = {block = array<i64: 32, 1, 1>, grid = ["$0", "1", "1"], kernel = "d0_moe_router"
//       CHECK:   llmserve.expert_linear
//  CHECK-SAME:     llmserve.dispatch = {block = array<i64: 128, 1, 1>, grid = ["16", "8", "1"], kernel = "d1_expert_linear"
//       CHECK:   llmserve.moe_combine
//  CHECK-SAME:     llmserve.dispatch = {block = array<i64: 256, 1, 1>, grid = ["$1", "1", "1"], kernel = "d2_moe_combine"
//       CHECK: gpu.func @llmserve_d0_moe_router
//       CHECK:   gpu.shuffle  xor
//       CHECK: gpu.func @llmserve_d1_expert_linear
//  CHECK-SAME:     workgroup(%{{.*}} : memref<256xi32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<256xi32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<1xi32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
//       CHECK:   memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [1024, 64], strides: [64, 1] : memref<1xbf16> to memref<1024x64xbf16, strided<[64, 1]>>
//       CHECK:   gpu.barrier
//       CHECK:   vector.load %{{.*}} {alignment = 16 : i64} : memref<?x64xbf16, strided<[64, 1]>>, vector<8xbf16>
//       CHECK:   vector.load %{{.*}} {alignment = 16 : i64} : memref<1024x64xbf16, strided<[64, 1]>>, vector<8xbf16>
//       CHECK:   gpu.shuffle  xor
//       CHECK: gpu.func @llmserve_d2_moe_combine
func.func @moe(%x: tensor<?x64xbf16>, %logits: tensor<?x8xbf16>, %wg: tensor<8x128x64xbf16>)
    -> tensor<?x128xbf16> {
  %w, %e = llmserve.moe_router %logits top_k 2 scoring softmax normalized
      : tensor<?x8xbf16> -> tensor<?x2xf32>, tensor<?x2xi32>
  %h = llmserve.expert_linear %x, %wg experts %e
      : tensor<?x64xbf16>, tensor<8x128x64xbf16>, tensor<?x2xi32> -> tensor<?x128xbf16>
  %y = llmserve.moe_combine %h, %w : tensor<?x128xbf16>, tensor<?x2xf32> -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}

// -----

// An int8 linear has the same three kernels. W streams as its bytes (rows
// of 32 k padded to 48 bytes, an odd number of 16), 16 values a cp.async;
// each B fragment's pairs of values become bf16 as they are read, and an
// output's sum is times its row's scale, plus the bias, in one fma.
// CHECK-LABEL: func.func @linear_int8
//       CHECK:   llmserve.linear
//  CHECK-SAME:     kernel = "d0_linear"
//  CHECK-SAME:     kernel = "d0_linear_small_m"
//  CHECK-SAME:     kernel = "d0_linear_medium_m"
//       CHECK:   gpu.func @llmserve_d0_linear(%{{.*}}: memref<1xbf16>, %{{.*}}: memref<1xi8>, %{{.*}}: memref<1xf32>, %{{.*}}: memref<1xbf16>, %{{.*}}: memref<1xbf16>, %{{.*}}: i64, %{{.*}}: i64)
//  CHECK-SAME:     workgroup(%{{.*}} : memref<4x64x40xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<4x64x48xi8, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
//       CHECK:     nvgpu.device_async_copy %{{.*}}, 16, %{{.*}} {bypassL1} : memref<128x256xi8, strided<[256, 1]>> to memref<4x64x48xi8, #gpu.address_space<workgroup>>
//       CHECK:     scf.for
//       CHECK:       %[[PAIR:.*]] = vector.load %{{.*}} : memref<4x64x48xi8, #gpu.address_space<workgroup>>, vector<2xi8>
//       CHECK:       %[[LOW:.*]] = vector.extract %[[PAIR]][0]
//       CHECK:       %[[WIDE:.*]] = arith.extsi %[[LOW]] : i8 to i32
//       CHECK:       %[[F:.*]] = arith.sitofp %[[WIDE]] : i32 to f32
//       CHECK:       %[[B:.*]] = arith.truncf %[[F]] : f32 to bf16
//       CHECK:       vector.from_elements %[[B]], %{{.*}} : vector<2xbf16>
//       CHECK:       nvvm.mma.sync
//   CHECK-NOT:       math.fma
//       CHECK:     scf.yield
//       CHECK:     %[[SCALE:.*]] = memref.load %{{.*}} : memref<128xf32, strided<[1]>>
//       CHECK:     math.fma %{{.*}}, %[[SCALE]], %{{.*}} : f32
//       CHECK:   gpu.func @llmserve_d0_linear_small_m(
//  CHECK-SAME:     workgroup(%{{.*}} : memref<4x16x136xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<4x16x144xi8, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
//       CHECK:   gpu.func @llmserve_d0_linear_medium_m(
//  CHECK-SAME:     workgroup(%{{.*}} : memref<3x64x72xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<3x32x80xi8, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
func.func @linear_int8(%x: tensor<?x256xbf16>, %b: tensor<128xbf16>) -> tensor<?x128xbf16> {
  %v = llmserve.weight "w" quantized int8_channel values : tensor<128x256xi8>
  %s = llmserve.weight "w" quantized int8_channel scales : tensor<128xf32>
  %y = llmserve.linear %x, %v scales %s bias %b : tensor<?x256xbf16>, tensor<128x256xi8>, tensor<128xbf16> -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}

// -----

// An int4 linear (a GPTQ checkpoint's, with zero points): W streams as its
// bytes, two values a byte (rows of 32 k are 16 bytes); each nibble minus
// its row's zero point becomes bf16. K's 2 groups of 128 are 2 splits; a
// group sums from zero (the large-tile kernel: 4 steps of 32 k in one
// iteration), then adds into the accumulators times its scales, one fma
// each; the zero points and scales are read once per group.
// CHECK-LABEL: func.func @linear_int4
//       CHECK:   llmserve.linear
//  CHECK-SAME:     grid = ["ceildiv($0,64)*min(max($0-64,0),1)", "2", "2"], kernel = "d0_linear"
//       CHECK:   gpu.func @llmserve_d0_linear(%{{.*}}: memref<1xbf16>, %{{.*}}: memref<1xi8>, %{{.*}}: memref<1xf32>, %{{.*}}: memref<1xi8>, %{{.*}}: memref<1xbf16>, %{{.*}}: i64, %{{.*}}: i64)
//  CHECK-SAME:     workgroup(%{{.*}} : memref<4x64x40xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<4x64x16xi8, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
//       CHECK:     memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [128, 128], strides: [128, 1] : memref<1xi8> to memref<128x128xi8, strided<[128, 1]>>
//       CHECK:     nvgpu.device_async_copy %{{.*}}, 16, %{{.*}} {bypassL1} : memref<128x128xi8, strided<[128, 1]>> to memref<4x64x16xi8, #gpu.address_space<workgroup>>
//       CHECK:     scf.for %{{.*}} iter_args(%[[ACC:[^ ]*]] = %{{.*}}
//       CHECK:       %[[Z8:.*]] = memref.load %{{.*}} : memref<128x2xi8, strided<[2, 1]>>
//       CHECK:       %[[ZERO:.*]] = arith.extsi %[[Z8]] : i8 to i32
//       CHECK:       nvvm.cp.async.wait.group 2
//       CHECK:       %[[BYTE:.*]] = memref.load %{{.*}} : memref<4x64x16xi8, #gpu.address_space<workgroup>>
//       CHECK:       %[[WIDE:.*]] = arith.extui %[[BYTE]] : i8 to i32
//       CHECK:       %[[LOW:.*]] = arith.andi %[[WIDE]], %{{.*}} : i32
//       CHECK:       arith.subi %[[LOW]], %[[ZERO]] : i32
//       CHECK:       %[[HIGH:.*]] = arith.shrui %[[WIDE]], %{{.*}} : i32
//       CHECK:       arith.subi %[[HIGH]], %[[ZERO]] : i32
// CHECK-COUNT-3:     nvvm.cp.async.wait.group 2
//       CHECK:       %[[SCALE:.*]] = memref.load %{{.*}} : memref<128x2xf32, strided<[2, 1]>>
//       CHECK:       math.fma %{{.*}}, %[[SCALE]], %[[ACC]] : f32
//       CHECK:   gpu.func @llmserve_d0_linear_small_m(
//  CHECK-SAME:     %{{.*}} : memref<4x16x80xi8, #gpu.address_space<workgroup>>
//       CHECK:   gpu.func @llmserve_d0_linear_medium_m(
//  CHECK-SAME:     %{{.*}} : memref<3x32x48xi8, #gpu.address_space<workgroup>>
// CHECK-COUNT-2:     nvvm.cp.async.wait.group 1
//       CHECK:       math.fma
func.func @linear_int4(%x: tensor<?x256xbf16>) -> tensor<?x128xbf16> {
  %v = llmserve.weight "w" quantized int4_group128 values from gptq : tensor<128x256xi4>
  %s = llmserve.weight "w" quantized int4_group128 scales from gptq : tensor<128x2xf32>
  %z = llmserve.weight "w" quantized int4_group128 zeros from gptq : tensor<128x2xi8>
  %y = llmserve.linear %x, %v scales %s zeros %z : tensor<?x256xbf16>, tensor<128x256xi4> -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}

// -----

// With f32 activations a warp computes each output: a lane takes 4 columns
// of each group, their nibbles (at its parity's shift) minus 8 (no zero
// points) times x, and adds their sum times the group's scale.
// CHECK-LABEL: func.func @linear_int4_f32
//       CHECK:   llmserve.linear
//  CHECK-SAME:     kernel = "d0_linear"
//   CHECK-NOT:     kernel = "d0_linear_small_m"
//       CHECK:   gpu.func @llmserve_d0_linear(%{{.*}}: memref<1xf32>, %{{.*}}: memref<1xi8>, %{{.*}}: memref<1xf32>, %{{.*}}: memref<1xf32>, %{{.*}}: i64, %{{.*}}: i64)
//       CHECK:     scf.for %{{.*}} = %{{.*}} to %{{c2[_0-9]*}} step %{{.*}} iter_args(%[[ACC:[^ ]*]] = %{{.*}}
//       CHECK:       %[[EIGHT:.*]] = arith.constant 8 : i32
// CHECK-COUNT-4:     arith.subi %{{.*}}, %[[EIGHT]] : i32
//       CHECK:       %[[SCALE:.*]] = memref.load %{{.*}} : memref<128x2xf32, strided<[2, 1]>>
//       CHECK:       math.fma %{{.*}}, %[[SCALE]], %[[ACC]] : f32
func.func @linear_int4_f32(%x: tensor<?x256xf32>) -> tensor<?x128xf32> {
  %v = llmserve.weight "w" quantized int4_group128 values : tensor<128x256xi4>
  %s = llmserve.weight "w" quantized int4_group128 scales : tensor<128x2xf32>
  %y = llmserve.linear %x, %v scales %s : tensor<?x256xf32>, tensor<128x256xi4> -> tensor<?x128xf32>
  return %y : tensor<?x128xf32>
}

// -----

// An FP8 checkpoint's codes as stored: W streams as its bytes like int8's;
// each pair of codes becomes f16 by cvt.rn.f16x2.e4m3x2 and then bf16
// (exactly). K = 320 is 3 groups of 128, the last half past K (zeros), so
// the large-tile kernel's splits are 3 of 4 steps of 32 k; a group folds
// into the accumulators times the scale of its column's block of 128 rows.
// CHECK-LABEL: func.func @linear_fp8
//       CHECK:   llmserve.linear
//  CHECK-SAME:     grid = ["ceildiv($0,64)*min(max($0-64,0),1)", "4", "3"], kernel = "d0_linear"
//       CHECK:   gpu.func @llmserve_d0_linear(%{{.*}}: memref<1xbf16>, %{{.*}}: memref<1xi8>, %{{.*}}: memref<1xf32>, %{{.*}}: memref<1xbf16>, %{{.*}}: i64, %{{.*}}: i64)
//  CHECK-SAME:     %{{.*}} : memref<4x64x48xi8, #gpu.address_space<workgroup>>
//       CHECK:     scf.for %{{.*}} iter_args(%[[ACC:[^ ]*]] = %{{.*}}
//       CHECK:       %[[CODES:.*]] = vector.load %{{.*}} : memref<4x64x48xi8, #gpu.address_space<workgroup>>, vector<2xi8>
//       CHECK:       %[[HALVES:.*]] = nvvm.convert.f8x2.to.f16x2 %[[CODES]] : vector<2xi8>(f8E4M3FN) -> vector<2xf16>
//       CHECK:       %[[LOW:.*]] = vector.extract %[[HALVES]][0] : f16 from vector<2xf16>
//       CHECK:       %[[WIDE:.*]] = arith.extf %[[LOW]] : f16 to f32
//       CHECK:       arith.truncf %[[WIDE]] : f32 to bf16
//       CHECK:       nvvm.mma.sync
//       CHECK:       %[[COL:.*]] = arith.minsi %{{.*}}, %{{c199[_0-9]*}} : index
//       CHECK:       %[[BLOCK:.*]] = arith.divui %[[COL]], %{{c128[_0-9]*}} : index
//       CHECK:       %[[SCALE:.*]] = memref.load %{{.*}}[%[[BLOCK]], %{{.*}}] : memref<2x3xf32, strided<[3, 1]>>
//       CHECK:       math.fma %{{.*}}, %[[SCALE]], %[[ACC]] : f32
func.func @linear_fp8(%x: tensor<?x320xbf16>) -> tensor<?x200xbf16> {
  %v = llmserve.weight "w" quantized fp8_block128 values from fp8_block128 : tensor<200x320xf8E4M3FN>
  %s = llmserve.weight "w" quantized fp8_block128 scales from fp8_block128 : tensor<2x3xf32>
  %y = llmserve.linear %x, %v scales %s : tensor<?x320xbf16>, tensor<200x320xf8E4M3FN> -> tensor<?x200xbf16>
  return %y : tensor<?x200xbf16>
}

// -----

// W8A8: x quantized to FP8 by a warp per group of 128 columns of a row (8
// groups a block of 8 warps: K = 320 is 3 groups, the last of 64): the
// group's largest magnitude by a butterfly of maxima, its scale, and codes
// by the shared e4m3 rounding. The linear streams x's codes as bytes, like
// W's, and both go to mma.sync m16n8k32 e4m3 as stored, 4 codes a word; the
// large-tile kernel takes stages of 64 k. A group folds into the
// accumulators times x's scale of the row times W's of the column's block.
// CHECK-LABEL: func.func @linear_w8a8
//       CHECK:   llmserve.quantize_fp8
//  CHECK-SAME:     grid = ["$0", "1", "1"], kernel = "d0_quantize_fp8"
//       CHECK:   llmserve.linear
//  CHECK-SAME:     grid = ["ceildiv($0,64)*min(max($0-64,0),1)", "4", "3"], kernel = "d1_linear"
//       CHECK:   gpu.func @llmserve_d0_quantize_fp8(%{{.*}}: memref<1xbf16>, %{{.*}}: memref<1xi8>, %{{.*}}: memref<1xf32>, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64)
//       CHECK:     gpu.shuffle  xor
//       CHECK:     arith.maximumf
//       CHECK:     %[[FLOOR:.*]] = arith.maximumf %{{[0-9]+}}, %cst{{.*}} : f32
//       CHECK:     %[[SCALE:.*]] = arith.divf %[[FLOOR]], %{{.*}} : f32
//       CHECK:     arith.divf %{{.*}}, %[[SCALE]] : f32
//       CHECK:     memref.store %{{.*}} : memref<?x320xi8
//       CHECK:     memref.store %[[SCALE]], %{{.*}} : memref<?x3xf32
//       CHECK:   gpu.func @llmserve_d1_linear(%{{.*}}: memref<1xi8>, %{{.*}}: memref<1xi8>, %{{.*}}: memref<1xf32>, %{{.*}}: memref<1xf32>, %{{.*}}: memref<1xbf16>, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64)
//  CHECK-SAME:     workgroup(%{{.*}} : memref<4x64x80xi8, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<4x64x80xi8, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
//       CHECK:   gpu.func @llmserve_d1_linear_small_m(
//  CHECK-SAME:     workgroup(%[[XS:.*]] : memref<4x16x144xi8, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[WS:.*]] : memref<4x16x144xi8, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
//       CHECK:     scf.for %{{.*}} iter_args(%[[ACC:[^ ]*]] = %{{.*}}
//       CHECK:       %[[A:.*]] = vector.load %[[XS]][{{.*}}] : memref<4x16x144xi8, #gpu.address_space<workgroup>>, vector<4xi8>
//  CHECK-NEXT:       vector.bitcast %[[A]] : vector<4xi8> to vector<1xi32>
//       CHECK:       %[[B:.*]] = vector.load %[[WS]][{{.*}}] : memref<4x16x144xi8, #gpu.address_space<workgroup>>, vector<4xi8>
//  CHECK-NEXT:       vector.bitcast %[[B]] : vector<4xi8> to vector<1xi32>
//       CHECK:       llvm.call_intrinsic "llvm.nvvm.mma.m16n8k32.row.col.f32.e4m3.e4m3.f32"
//       CHECK:       %[[WSCALE:.*]] = memref.load %{{.*}} : memref<2x3xf32, strided<[3, 1]>>
//       CHECK:       %[[XSCALE:.*]] = memref.load %{{.*}} : memref<?x3xf32, strided<[3, 1]>>
//       CHECK:       %[[BOTH:.*]] = arith.mulf %[[XSCALE]], %[[WSCALE]] : f32
//       CHECK:       math.fma %{{.*}}, %[[BOTH]], %[[ACC]] : f32
//       CHECK:   gpu.func @llmserve_d1_linear_medium_m(
//  CHECK-SAME:     workgroup(%{{.*}} : memref<3x64x80xi8, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<3x32x80xi8, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
func.func @linear_w8a8(%x: tensor<?x320xbf16>) -> tensor<?x200xbf16> {
  %v = llmserve.weight "w" quantized fp8_block128 values from fp8_block128 : tensor<200x320xf8E4M3FN>
  %s = llmserve.weight "w" quantized fp8_block128 scales from fp8_block128 : tensor<2x3xf32>
  %c, %cs = llmserve.quantize_fp8 %x : tensor<?x320xbf16> -> tensor<?x320xf8E4M3FN>
  %y = llmserve.linear %c input_scales %cs, %v scales %s : tensor<?x320xf8E4M3FN>, tensor<200x320xf8E4M3FN> -> tensor<?x200xbf16>
  return %y : tensor<?x200xbf16>
}

// -----

// Sibling linears (llmserve-group-sibling-linears) run as one kernel per
// step size: block y indexes the column tiles of q (128 rows: 2 tiles of 64,
// 8 of 16, 4 of 32) then k (32 rows: 1, 2 and 1), and each block computes
// its linear's tile through the one pair of shared-memory rings, waiting
// for the grids before it in its own branch. Bindings are the region's
// inputs then its results.
// CHECK-LABEL: func.func @sibling_linears
//       CHECK:   llmserve.dispatch_region
//  CHECK-SAME:     llmserve.dispatch = [{block = array<i64: 128, 1, 1>, grid = ["ceildiv($0,64)*min(max($0-64,0),1)", "3", "1"], kernel = "d0_dispatch_region"
//  CHECK-SAME:                          {block = array<i64: 64, 1, 1>, grid = ["ceildiv($0,16)*(1-min(max($0-16,0),1))", "10", "1"], kernel = "d0_dispatch_region_small_m"
//  CHECK-SAME:                          {block = array<i64: 128, 1, 1>, grid = ["ceildiv($0,64)*min(max($0-16,0),1)*(1-min(max($0-64,0),1))", "5", "1"], kernel = "d0_dispatch_region_medium_m"
//       CHECK:   gpu.func @llmserve_d0_dispatch_region(%{{.*}}: memref<1xbf16>, %{{.*}}: memref<1xbf16>, %{{.*}}: memref<1xbf16>, %{{.*}}: memref<1xbf16>, %{{.*}}: memref<1xbf16>, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64)
//  CHECK-SAME:     workgroup(%{{.*}} : memref<4x64x40xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<4x64x40xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
//  CHECK-SAME:     kernel attributes
//  CHECK-NEXT:     %[[Y:.*]] = gpu.block_id  y
//       CHECK:     %[[Q:.*]] = arith.cmpi ult, %[[Y]], %c2
//  CHECK-NEXT:     scf.if %[[Q]] {
//       CHECK:       memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [128, 64]
//       CHECK:       nvvm.griddepcontrol  wait
//       CHECK:       nvvm.mma.sync
//       CHECK:     arith.cmpi ult, %[[Y]], %c3
//       CHECK:     arith.cmpi uge, %[[Y]], %c2
//       CHECK:     scf.if
//       CHECK:       arith.subi %[[Y]], %c2
//       CHECK:       memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [32, 64]
//       CHECK:       nvvm.griddepcontrol  wait
//       CHECK:       nvvm.mma.sync
//       CHECK:     gpu.return
//       CHECK:   gpu.func @llmserve_d0_dispatch_region_small_m
//  CHECK-SAME:     workgroup(%{{.*}} : memref<4x16x136xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<4x16x136xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
//  CHECK-SAME:     kernel attributes
//       CHECK:   gpu.func @llmserve_d0_dispatch_region_medium_m
func.func @sibling_linears(%x: tensor<?x64xbf16>) -> (tensor<?x128xbf16>, tensor<?x32xbf16>) {
  %wq = llmserve.weight "q" : tensor<128x64xbf16>
  %wk = llmserve.weight "k" : tensor<32x64xbf16>
  %y:2 = llmserve.dispatch_region(%x, %wq, %wk) : (tensor<?x64xbf16>, tensor<128x64xbf16>, tensor<32x64xbf16>) -> (tensor<?x128xbf16>, tensor<?x32xbf16>) {
  ^bb0(%in: tensor<?x64xbf16>, %q: tensor<128x64xbf16>, %k: tensor<32x64xbf16>):
    %a = llmserve.linear %in, %q : tensor<?x64xbf16>, tensor<128x64xbf16> -> tensor<?x128xbf16>
    %b = llmserve.linear %in, %k : tensor<?x64xbf16>, tensor<32x64xbf16> -> tensor<?x32xbf16>
    llmserve.yield %a, %b : tensor<?x128xbf16>, tensor<?x32xbf16>
  }
  return %y#0, %y#1 : tensor<?x128xbf16>, tensor<?x32xbf16>
}

// -----

// Sibling ropes (llmserve-group-sibling-ropes) are one kernel: a block per
// token reads its position once and rotates q's row, then k's, with one
// frequency table.
// CHECK-LABEL: func.func @sibling_ropes
//       CHECK:   llmserve.dispatch_region
//  CHECK-SAME:     llmserve.dispatch = {block = array<i64: 256, 1, 1>, grid = ["$1", "1", "1"], kernel = "d0_dispatch_region"
//       CHECK:   memref.global "private" constant @llmserve_d0_dispatch_region_inv_freq : memref<8xf32>
//   CHECK-NOT:   memref.global
//       CHECK:   gpu.func @llmserve_d0_dispatch_region(%{{.*}}: memref<1xi32>, %{{.*}}: memref<1xbf16>, %{{.*}}: memref<1xbf16>, %{{.*}}: memref<1xbf16>, %{{.*}}: memref<1xbf16>, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64)
//       CHECK:     %[[T:.*]] = gpu.block_id  x
//       CHECK:     memref.load %{{.*}}[%[[T]]] : memref<?xi32, strided<[1]>>
//   CHECK-NOT:     memref.load %{{.*}} : memref<?xi32
//       CHECK:     scf.for %{{.*}} = %{{.*}} to %c32 step %c256
//       CHECK:       memref.store %{{.*}}, %{{.*}}[%[[T]], %{{.*}}] : memref<?x64xbf16, strided<[64, 1]>>
//       CHECK:     scf.for %{{.*}} = %{{.*}} to %c16 step %c256
//       CHECK:       memref.store %{{.*}}, %{{.*}}[%[[T]], %{{.*}}] : memref<?x32xbf16, strided<[32, 1]>>
//       CHECK:     gpu.return
func.func @sibling_ropes(%pos: tensor<?xi32>, %q: tensor<?x64xbf16>, %k: tensor<?x32xbf16>) -> (tensor<?x64xbf16>, tensor<?x32xbf16>) {
  %r:2 = llmserve.dispatch_region(%pos, %q, %k) : (tensor<?xi32>, tensor<?x64xbf16>, tensor<?x32xbf16>) -> (tensor<?x64xbf16>, tensor<?x32xbf16>) {
  ^bb0(%p: tensor<?xi32>, %x: tensor<?x64xbf16>, %y: tensor<?x32xbf16>):
    %a = llmserve.rope %x, %p style neox head_dim 16 rotary_dim 16 theta 1.000000e+04 : tensor<?x64xbf16>, tensor<?xi32>
    %b = llmserve.rope %y, %p style neox head_dim 16 rotary_dim 16 theta 1.000000e+04 : tensor<?x32xbf16>, tensor<?xi32>
    llmserve.yield %a, %b : tensor<?x64xbf16>, tensor<?x32xbf16>
  }
  return %r#0, %r#1 : tensor<?x64xbf16>, tensor<?x32xbf16>
}

// -----

// A layer's ropes and kv_writes (llmserve-group-kv-writes) are one kernel.
// The caches are bound once, updated in place; the rotated queries follow
// the inputs. A block per token reads its slot once, rotates q's row into
// the result and k's straight into its cache slot (never stored elsewhere),
// then copies v's row into its cache.
// CHECK-LABEL: func.func @ropes_and_kv_writes
//       CHECK:   llmserve.dispatch_region
//  CHECK-SAME:     grid = ["$0", "1", "1"], kernel = "d0_dispatch_region"
//       CHECK:   gpu.func @llmserve_d0_dispatch_region(%{{.*}}: memref<1xbf16>, %{{.*}}: memref<1xi32>, %{{.*}}: memref<1xbf16>, %{{.*}}: memref<1xbf16>, %{{.*}}: memref<1xi32>, %{{.*}}: memref<1xbf16>, %{{.*}}: memref<1xbf16>, %{{.*}}: memref<1xbf16>, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64)
//       CHECK:     %[[T:.*]] = gpu.block_id  x
//       CHECK:     memref.load %{{.*}}[%[[T]]] : memref<?xi32, strided<[1]>>
//       CHECK:     memref.load %{{.*}}[%[[T]]] : memref<?xi32, strided<[1]>>
//   CHECK-NOT:     memref.load %{{.*}} : memref<?xi32
//       CHECK:     scf.for %{{.*}} = %{{.*}} to %c32 step %c256
//       CHECK:       memref.store %{{.*}}, %{{.*}}[%[[T]], %{{.*}}] : memref<?x64xbf16, strided<[64, 1]>>
//       CHECK:     scf.for %{{.*}} = %{{.*}} to %c16{{.*}} step %c256
//   CHECK-NOT:       memref.store %{{.*}} : memref<?x32xbf16
//       CHECK:       scf.if
//       CHECK:         memref.store %{{.*}} : memref<?x?xbf16
//       CHECK:     scf.for %{{.*}} = %{{.*}} to %c32{{.*}} step %c256
//       CHECK:       memref.load %{{.*}}[%[[T]], %{{.*}}] : memref<?x32xbf16, strided<[32, 1]>>
//       CHECK:       scf.if
//       CHECK:         memref.store %{{.*}} : memref<?x?xbf16
//       CHECK:     gpu.return
func.func @ropes_and_kv_writes(%q: tensor<?x64xbf16>, %pos: tensor<?xi32>, %k: tensor<?x32xbf16>, %kc: tensor<?x4x2x16xbf16>, %slots: tensor<?xi32>, %v: tensor<?x32xbf16>, %vc: tensor<?x4x2x16xbf16>) -> (tensor<?x64xbf16>, tensor<?x4x2x16xbf16>, tensor<?x4x2x16xbf16>) {
  %r:3 = llmserve.dispatch_region(%q, %pos, %k, %kc, %slots, %v, %vc) : (tensor<?x64xbf16>, tensor<?xi32>, tensor<?x32xbf16>, tensor<?x4x2x16xbf16>, tensor<?xi32>, tensor<?x32xbf16>, tensor<?x4x2x16xbf16>) -> (tensor<?x64xbf16>, tensor<?x4x2x16xbf16>, tensor<?x4x2x16xbf16>) {
  ^bb0(%x: tensor<?x64xbf16>, %p: tensor<?xi32>, %y: tensor<?x32xbf16>, %a: tensor<?x4x2x16xbf16>, %s: tensor<?xi32>, %z: tensor<?x32xbf16>, %b: tensor<?x4x2x16xbf16>):
    %rq = llmserve.rope %x, %p style neox head_dim 16 rotary_dim 16 theta 1.000000e+04 : tensor<?x64xbf16>, tensor<?xi32>
    %rk = llmserve.rope %y, %p style neox head_dim 16 rotary_dim 16 theta 1.000000e+04 : tensor<?x32xbf16>, tensor<?xi32>
    %wk = llmserve.kv_write %rk into %a at %s : tensor<?x32xbf16>, tensor<?x4x2x16xbf16>, tensor<?xi32>
    %wv = llmserve.kv_write %z into %b at %s : tensor<?x32xbf16>, tensor<?x4x2x16xbf16>, tensor<?xi32>
    llmserve.yield %rq, %wk, %wv : tensor<?x64xbf16>, tensor<?x4x2x16xbf16>, tensor<?x4x2x16xbf16>
  }
  return %r#0, %r#1, %r#2 : tensor<?x64xbf16>, tensor<?x4x2x16xbf16>, tensor<?x4x2x16xbf16>
}

// -----

// Into an FP8 cache, a rotated key is the bf16 value a rope would have
// stored, then encoded with its head's scale: as if written by its own
// kv_write.
// CHECK-LABEL: func.func @rope_into_fp8_cache
//       CHECK:   gpu.func @llmserve_d0_dispatch_region(%{{.*}}: memref<1xbf16>, %{{.*}}: memref<1xi32>, %{{.*}}: memref<1xi8>, %{{.*}}: memref<1xi32>, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64)
//       CHECK:     scf.for
//       CHECK:       %[[ROUNDED:.*]] = arith.truncf %{{.*}} : f32 to bf16
//       CHECK:       arith.extf %[[ROUNDED]] : bf16 to f32
//       CHECK:       scf.if
//       CHECK:         arith.constant 5.000000e-01 : f32
//       CHECK:         arith.constant 2.500000e-01 : f32
//       CHECK:         memref.store %{{.*}} : memref<?x?xi8
func.func @rope_into_fp8_cache(%k: tensor<?x32xbf16>, %pos: tensor<?xi32>, %kc: tensor<?x4x2x16xf8E4M3FN>, %slots: tensor<?xi32>) -> tensor<?x4x2x16xf8E4M3FN> {
  %r = llmserve.dispatch_region(%k, %pos, %kc, %slots) : (tensor<?x32xbf16>, tensor<?xi32>, tensor<?x4x2x16xf8E4M3FN>, tensor<?xi32>) -> tensor<?x4x2x16xf8E4M3FN> {
  ^bb0(%y: tensor<?x32xbf16>, %p: tensor<?xi32>, %a: tensor<?x4x2x16xf8E4M3FN>, %s: tensor<?xi32>):
    %rk = llmserve.rope %y, %p style neox head_dim 16 rotary_dim 16 theta 1.000000e+04 : tensor<?x32xbf16>, tensor<?xi32>
    %wk = llmserve.kv_write %rk into %a at %s scale [5.000000e-01, 2.500000e-01] : tensor<?x32xbf16>, tensor<?x4x2x16xf8E4M3FN>, tensor<?xi32>
    llmserve.yield %wk : tensor<?x4x2x16xf8E4M3FN>
  }
  return %r : tensor<?x4x2x16xf8E4M3FN>
}
