// RUN: %llmserve-opt %s -llmserve-to-cpu-kernels=vnni=true -split-input-file | FileCheck %s
// RUN: %llmserve-opt %s -llmserve-to-cpu-kernels=vnni=false -split-input-file | FileCheck %s --check-prefix=PORTABLE

// With VNNI, an int8 linear whose K is a multiple of 64 quantizes each row
// of x in blocks of 64 into scratch made at the kernel's entry (values, the
// block's scale and sum), then per block multiplies the weight's 64 bytes,
// sign bit flipped, with x's 64 by vpdpbusd, starting from -128 times the
// block's sum, and accumulates the lanes times the block's
// scale; the reduced sum is scaled by the row's scale, then the bias added.
// The weight is asked for in rows8x64 ([N/8][K/64][8][64]), which a
// single-row tile reads as one stream, without software prefetches.
// Workgroups cover 256 columns.
// CHECK-LABEL: func.func @linear_int8_vnni
//       CHECK:   llmserve.weight "w" quantized int8_channel values {llmserve.layout = "rows8x64"}
//       CHECK:   llmserve.dispatch = {grid = ["ceildiv($0,64)", "2", "1"]
//       CHECK: func.func @llmserve_d0_linear
//       CHECK:   %[[XQ:.+]] = memref.alloca() : memref<4x128xi8>
//       CHECK:   %[[XS:.+]] = memref.alloca() : memref<4x2xf32>
//       CHECK:   %[[XSUM:.+]] = memref.alloca() : memref<4x2xi32>
//       CHECK:   vector.reduction <maximumf>
//       CHECK:   math.roundeven
//       CHECK:   arith.fptosi %{{.+}} : vector<16xf32> to vector<16xi32>
//       CHECK:   arith.trunci %{{.+}} : vector<16xi32> to vector<16xi8>
//       CHECK:   vector.store %{{.+}}, %[[XQ]]
//       CHECK:   memref.store %{{.+}}, %[[XS]]
//       CHECK:   memref.store %{{.+}}, %[[XSUM]]
//       CHECK:   vector.load %[[XQ]]{{.+}} : memref<4x128xi8>, vector<64xi8>
//       CHECK:   %[[SUM:.+]] = memref.load %[[XSUM]]
//       CHECK:   %[[MINUS128:.+]] = arith.subi %c0_i32, %c128_i32
//       CHECK:   %[[OFFSET:.+]] = arith.muli %[[SUM]], %[[MINUS128]]
//       CHECK:   vector.insert %[[OFFSET]], %{{.+}} [0] : i32 into vector<16xi32>
//   CHECK-NOT:   memref.prefetch
//       CHECK:   %[[W:.+]] = vector.load %{{.+}} : memref<37x2x8x64xi8>, vector<64xi8>
//       CHECK:   %[[WU:.+]] = arith.xori %[[W]], %{{.+}} : vector<64xi8>
//       CHECK:   %[[DOT:.+]] = llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%{{.+}}, %[[WU]], %{{.+}}) : (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
//       CHECK:   %[[F:.+]] = arith.sitofp %[[DOT]] : vector<16xi32> to vector<16xf32>
//       CHECK:   vector.fma %[[F]]
//       CHECK:   vector.reduction <add>
//       CHECK:   arith.mulf
//       CHECK:   arith.addf

// Without VNNI, the same layout and grid in f32 (tiles of 2 x 2 without
// AVX-512): x is not quantized, and the weight's values are loaded and
// converted 16 at a time as they are (no sign flip); a single-row tile
// prefetches its group 8 blocks ahead.
// PORTABLE-LABEL: func.func @linear_int8_vnni
//       PORTABLE:   llmserve.weight "w" quantized int8_channel values {llmserve.layout = "rows8x64"}
//       PORTABLE:   llmserve.dispatch = {grid = ["ceildiv($0,64)", "2", "1"]
//       PORTABLE: func.func @llmserve_d0_linear
//   PORTABLE-NOT:   memref.alloca
//   PORTABLE-NOT:   arith.xori
//       PORTABLE:   scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c2
//       PORTABLE:   %[[Q:.+]] = vector.load %{{.+}} : memref<37x2x8x64xi8>, vector<16xi8>
//   PORTABLE-NOT:   vpdpbusd
//       PORTABLE:   arith.sitofp %[[Q]] : vector<16xi8> to vector<16xf32>
//       PORTABLE:   vector.fma
//       PORTABLE:   memref.prefetch %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}], read, locality<3>, data : memref<37x2x8x64xi8>
func.func @linear_int8_vnni(%x: tensor<?x128xf32>) -> tensor<?x296xf32> {
  %v = llmserve.weight "w" quantized int8_channel values : tensor<296x128xi8>
  %s = llmserve.weight "w" quantized int8_channel scales : tensor<296xf32>
  %b = llmserve.weight "b" : tensor<296xf32>
  %y = llmserve.linear %x, %v scales %s bias %b : tensor<?x128xf32>, tensor<296x128xi8>, tensor<296xf32> -> tensor<?x296xf32>
  return %y : tensor<?x296xf32>
}

// -----

// K not a multiple of 64, or N not of 8: the dot-product kernel converts the
// row-major int8 values.
// CHECK-LABEL: func.func @linear_int8_ragged
//       CHECK:   llmserve.weight "w" quantized int8_channel values : tensor<32x96xi8>
//       CHECK:   llmserve.weight "v" quantized int8_channel values : tensor<36x128xi8>
//       CHECK: func.func @llmserve_d0_linear
//   CHECK-NOT:   llvm.call_intrinsic
//       CHECK:   arith.sitofp %{{.+}} : vector<16xi8> to vector<16xf32>
//       CHECK: func.func @llmserve_d1_linear
//   CHECK-NOT:   llvm.call_intrinsic
//       CHECK:   arith.sitofp %{{.+}} : vector<16xi8> to vector<16xf32>
func.func @linear_int8_ragged(%x: tensor<?x96xf32>, %x2: tensor<?x128xf32>) -> (tensor<?x32xf32>, tensor<?x36xf32>) {
  %v = llmserve.weight "w" quantized int8_channel values : tensor<32x96xi8>
  %s = llmserve.weight "w" quantized int8_channel scales : tensor<32xf32>
  %y = llmserve.linear %x, %v scales %s : tensor<?x96xf32>, tensor<32x96xi8> -> tensor<?x32xf32>
  %v2 = llmserve.weight "v" quantized int8_channel values : tensor<36x128xi8>
  %s2 = llmserve.weight "v" quantized int8_channel scales : tensor<36xf32>
  %z = llmserve.linear %x2, %v2 scales %s2 : tensor<?x128xf32>, tensor<36x128xi8> -> tensor<?x36xf32>
  return %y, %z : tensor<?x32xf32>, tensor<?x36xf32>
}

// -----

// int4: x is quantized in blocks of 128, one group of the weight's scales
// (so the scratch holds 2 scales and sums a row for K = 256); each block
// starts from -8 times its sum (-z times it with zero points: below). The
// weight's 32 bytes per 64 columns (rows8x64, [N/8][K/64][8][32]) give its
// values as low nibbles then high ones (unsigned, Q + 8); two vpdpbusd sum a
// block of 128 into one int32 accumulator, which the lanes accumulate times
// x's block scale and the weight's scale for the group; the reduced sum is
// not scaled again.
// CHECK-LABEL: func.func @linear_int4_vnni
//       CHECK:   llmserve.weight "w" quantized int4_group128 values {llmserve.layout = "rows8x64"}
//       CHECK: func.func @llmserve_d0_linear
//       CHECK:   %[[XSUM:.+]] = memref.alloca() : memref<4x2xi32>
//       CHECK:   memref.store %{{.+}}, %[[XSUM]]
//       CHECK:   %[[WS:.+]] = memref.load %{{.+}}[%{{.+}}, %[[GROUP:.+]]] : memref<40x2xf32>
//       CHECK:   %[[W:.+]] = vector.load %{{.+}} : memref<5x4x8x32xi8>, vector<32xi8>
//       CHECK:   %[[LO:.+]] = arith.andi %[[W]], %{{.+}} : vector<32xi8>
//       CHECK:   %[[HI:.+]] = arith.shrui %[[W]], %{{.+}} : vector<32xi8>
//       CHECK:   %[[WQ:.+]] = vector.shuffle %[[LO]], %[[HI]] [0, 1, {{.*}}, 62, 63] : vector<32xi8>, vector<32xi8>
//       CHECK:   %[[W2:.+]] = vector.load %{{.+}} : memref<5x4x8x32xi8>, vector<32xi8>
//       CHECK:   %[[WQ2:.+]] = vector.shuffle
//       CHECK:   %[[MINUS8:.+]] = arith.subi %c0_i32, %c8_i32
//       CHECK:   %[[DOT:.+]] = llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%{{.+}}, %[[WQ]], %{{.+}})
//       CHECK:   llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%[[DOT]], %[[WQ2]], %{{.+}})
//       CHECK:   %[[S:.+]] = arith.mulf %{{.+}}, %[[WS]] : f32
//       CHECK:   %[[SV:.+]] = vector.broadcast %[[S]] : f32 to vector<16xf32>
//       CHECK:   vector.fma %{{.+}}, %[[SV]]
//       CHECK:   %[[SUM:.+]] = vector.reduction <add>
//   CHECK-NOT:   arith.mulf %[[SUM]]
//       CHECK:   memref.store %[[SUM]]
func.func @linear_int4_vnni(%x: tensor<?x256xf32>) -> tensor<?x40xf32> {
  %v = llmserve.weight "w" quantized int4_group128 values : tensor<40x256xi4>
  %s = llmserve.weight "w" quantized int4_group128 scales : tensor<40x2xf32>
  %y = llmserve.linear %x, %v scales %s : tensor<?x256xf32>, tensor<40x256xi4> -> tensor<?x40xf32>
  return %y : tensor<?x40xf32>
}

// -----

// int4 with zero points (a GPTQ or AWQ checkpoint's): a block of column c
// starts from -zeros[c, group] times x's block sum, the zero point read as
// i8 and widened.
// Without VNNI the same layout and tiles: no scratch for x, and each
// block's 16-value chunks of the weight as f32, less the zero point, times
// the group's scale, FMA'd with x's f32 values.
// PORTABLE-LABEL: func.func @linear_int4_zeros_vnni
//       PORTABLE:   llmserve.weight "w" quantized int4_group128 values from awq {llmserve.layout = "rows8x64"}
//       PORTABLE: func.func @llmserve_d0_linear
//   PORTABLE-NOT:   memref.alloca
//   PORTABLE-NOT:   vpdpbusd
//       PORTABLE:   vector.extract_strided_slice %{{.+}} {offsets = [0], sizes = [16], strides = [1]} : vector<64xi8> to vector<16xi8>
//       PORTABLE:   arith.uitofp %{{.+}} : vector<16xi8> to vector<16xf32>
//       PORTABLE:   arith.subf
//       PORTABLE:   arith.mulf
//       PORTABLE:   vector.fma
// CHECK-LABEL: func.func @linear_int4_zeros_vnni
//       CHECK:   llmserve.weight "w" quantized int4_group128 values from awq {llmserve.layout = "rows8x64"}
//       CHECK: func.func @llmserve_d0_linear
//       CHECK:   %[[Z:.+]] = memref.load %{{.+}}[%{{.+}}, %{{.+}}] : memref<16x2xi8>
//       CHECK:   %[[ZW:.+]] = arith.extsi %[[Z]] : i8 to i32
//       CHECK:   %[[NEG:.+]] = arith.subi %c0_i32, %[[ZW]]
//       CHECK:   arith.muli %{{.+}}, %[[NEG]]
//       CHECK:   llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
func.func @linear_int4_zeros_vnni(%x: tensor<?x256xf32>) -> tensor<?x16xf32> {
  %v = llmserve.weight "w" quantized int4_group128 values from awq : tensor<16x256xi4>
  %s = llmserve.weight "w" quantized int4_group128 scales from awq : tensor<16x2xf32>
  %z = llmserve.weight "w" quantized int4_group128 zeros from awq : tensor<16x2xi8>
  %y = llmserve.linear %x, %v scales %s zeros %z : tensor<?x256xf32>, tensor<16x256xi4> -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}
