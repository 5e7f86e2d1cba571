// RUN: %llmserve-opt %s -llmserve-quantize-fp8-activations -split-input-file | FileCheck %s

// Linears of FP8 codes that read one input share its quantization, placed
// after the input's definition; the results keep their types.
// CHECK-LABEL: func.func @shared
//  CHECK-SAME:     (%[[X:.*]]: tensor<?x256xbf16>
//       CHECK:   %[[C:.*]], %[[S:.*]] = llmserve.quantize_fp8 %[[X]] : tensor<?x256xbf16> -> tensor<?x256xf8E4M3FN>
//   CHECK-NOT:   llmserve.quantize_fp8
//       CHECK:   llmserve.linear %[[C]] input_scales %[[S]], %{{.*}} scales %{{.*}} : tensor<?x256xf8E4M3FN>, tensor<256x256xf8E4M3FN> -> tensor<?x256xbf16>
//       CHECK:   llmserve.linear %[[C]] input_scales %[[S]], %{{.*}} scales %{{.*}} bias %{{.*}} : tensor<?x256xf8E4M3FN>, tensor<128x256xf8E4M3FN>, tensor<128xbf16> -> tensor<?x128xbf16>
func.func @shared(%x: tensor<?x256xbf16>, %b: tensor<128xbf16>) -> (tensor<?x256xbf16>, tensor<?x128xbf16>) {
  %q = llmserve.weight "q.weight" quantized fp8_block128 values from fp8_block128 : tensor<256x256xf8E4M3FN>
  %qs = llmserve.weight "q.weight" quantized fp8_block128 scales from fp8_block128 : tensor<2x2xf32>
  %k = llmserve.weight "k.weight" quantized fp8_block128 values from fp8_block128 : tensor<128x256xf8E4M3FN>
  %ks = llmserve.weight "k.weight" quantized fp8_block128 scales from fp8_block128 : tensor<1x2xf32>
  %yq = llmserve.linear %x, %q scales %qs : tensor<?x256xbf16>, tensor<256x256xf8E4M3FN> -> tensor<?x256xbf16>
  %yk = llmserve.linear %x, %k scales %ks bias %b : tensor<?x256xbf16>, tensor<128x256xf8E4M3FN>, tensor<128xbf16> -> tensor<?x128xbf16>
  return %yq, %yk : tensor<?x256xbf16>, tensor<?x128xbf16>
}

// -----

// Each input gets its own quantization, after the op that makes it.
// CHECK-LABEL: func.func @chained
//       CHECK:   llmserve.quantize_fp8 %{{.*}} : tensor<?x256xf16> -> tensor<?x256xf8E4M3FN>
//       CHECK:   %[[Y:.*]] = llmserve.linear
//  CHECK-NEXT:   %[[C:.*]], %[[S:.*]] = llmserve.quantize_fp8 %[[Y]] : tensor<?x256xf16> -> tensor<?x256xf8E4M3FN>
//       CHECK:   llmserve.linear %[[C]] input_scales %[[S]]
func.func @chained(%x: tensor<?x256xf16>) -> tensor<?x256xf16> {
  %w = llmserve.weight "w" quantized fp8_block128 values from fp8_block128 : tensor<256x256xf8E4M3FN>
  %s = llmserve.weight "w" quantized fp8_block128 scales from fp8_block128 : tensor<2x2xf32>
  %y = llmserve.linear %x, %w scales %s : tensor<?x256xf16>, tensor<256x256xf8E4M3FN> -> tensor<?x256xf16>
  %z = llmserve.linear %y, %w scales %s : tensor<?x256xf16>, tensor<256x256xf8E4M3FN> -> tensor<?x256xf16>
  return %z : tensor<?x256xf16>
}

// -----

// Left as they are: linears of other weights, of an f32 input (no tensor
// cores), of a K that is not whole 16-byte rows of codes, and of a bias of
// another type than the result (the logits of a narrow model).
// CHECK-LABEL: func.func @kept
//   CHECK-NOT:   llmserve.quantize_fp8
//   CHECK-NOT:   input_scales
func.func @kept(%x: tensor<?x256xbf16>, %f: tensor<?x256xf32>, %r: tensor<?x200xbf16>, %b: tensor<128xbf16>) -> (tensor<?x128xbf16>, tensor<?x128xf32>, tensor<?x128xbf16>, tensor<?x128xf32>) {
  %w = llmserve.weight "w" : tensor<128x256xbf16>
  %y = llmserve.linear %x, %w : tensor<?x256xbf16>, tensor<128x256xbf16> -> tensor<?x128xbf16>
  %c = llmserve.weight "c" quantized fp8_block128 values from fp8_block128 : tensor<128x256xf8E4M3FN>
  %cs = llmserve.weight "c" quantized fp8_block128 scales from fp8_block128 : tensor<1x2xf32>
  %yf = llmserve.linear %f, %c scales %cs : tensor<?x256xf32>, tensor<128x256xf8E4M3FN> -> tensor<?x128xf32>
  %d = llmserve.weight "d" quantized fp8_block128 values from fp8_block128 : tensor<128x200xf8E4M3FN>
  %ds = llmserve.weight "d" quantized fp8_block128 scales from fp8_block128 : tensor<1x2xf32>
  %yr = llmserve.linear %r, %d scales %ds : tensor<?x200xbf16>, tensor<128x200xf8E4M3FN> -> tensor<?x128xbf16>
  %yb = llmserve.linear %x, %c scales %cs bias %b : tensor<?x256xbf16>, tensor<128x256xf8E4M3FN>, tensor<128xbf16> -> tensor<?x128xf32>
  return %y, %yf, %yr, %yb : tensor<?x128xbf16>, tensor<?x128xf32>, tensor<?x128xbf16>, tensor<?x128xf32>
}
