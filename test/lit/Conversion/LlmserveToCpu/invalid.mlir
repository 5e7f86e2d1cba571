// RUN: %llmserve-opt %s -llmserve-to-cpu-kernels -split-input-file -verify-diagnostics

// Only elementwise generics (identity maps, every loop parallel) have a CPU
// kernel.
func.func @transposing_generic(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @below {{'linalg.generic' op has no CPU kernel (only elementwise generics with identity maps do)}}
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x8xf32>) outs(%x : tensor<8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<8x8xf32>
  return %y : tensor<8x8xf32>
}

// -----

// silu_mul reaches the CPU kernels as a linalg.generic (llmserve-to-linalg).
func.func @silu_mul_not_in_linalg(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @below {{'llmserve.silu_mul' op has no CPU kernel of its own: llmserve-to-linalg makes it a linalg.generic first}}
  %y = llmserve.silu_mul %x, %x : tensor<8x8xf32>
  return %y : tensor<8x8xf32>
}

// -----

// A dispatch region's CPU kernel is panel linears then one elementwise generic.
func.func @region_of_other_ops(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %w = llmserve.weight "w" : tensor<32xf32>
  // expected-error @below {{'llmserve.dispatch_region' op has no CPU kernel: expected linears then one elementwise linalg.generic, got llmserve.rms_norm}}
  %h = llmserve.dispatch_region(%x, %w) : (tensor<?x32xf32>, tensor<32xf32>) -> tensor<?x32xf32> {
  ^bb0(%in: tensor<?x32xf32>, %win: tensor<32xf32>):
    %n = llmserve.rms_norm %in, %win epsilon 1.0e-05 : tensor<?x32xf32>, tensor<32xf32>
    llmserve.yield %n : tensor<?x32xf32>
  }
  return %h : tensor<?x32xf32>
}

// -----

func.func @region_without_epilogue(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %w = llmserve.weight "w" : tensor<32x32xf32>
  // expected-error @below {{'llmserve.dispatch_region' op has no CPU kernel: expected linears then one 2-D elementwise linalg.generic, which does not read its init, yielding its result}}
  %h = llmserve.dispatch_region(%x, %w) : (tensor<?x32xf32>, tensor<32x32xf32>) -> tensor<?x32xf32> {
  ^bb0(%in: tensor<?x32xf32>, %win: tensor<32x32xf32>):
    %y = llmserve.linear %in, %win : tensor<?x32xf32>, tensor<32x32xf32> -> tensor<?x32xf32>
    llmserve.yield %y : tensor<?x32xf32>
  }
  return %h : tensor<?x32xf32>
}

// -----

// The weight is a function argument, so it is not in panels.
func.func @region_weight_not_in_panels(%x: tensor<?x32xf32>, %w: tensor<32x32xf32>) -> tensor<?x32xf32> {
  %h = llmserve.dispatch_region(%x, %w) : (tensor<?x32xf32>, tensor<32x32xf32>) -> tensor<?x32xf32> {
  ^bb0(%in: tensor<?x32xf32>, %win: tensor<32x32xf32>):
    // expected-error @below {{'llmserve.linear' op cannot be fused on the CPU: the linears of a dispatch region read one input of the region and weights of one shape in panels}}
    %y = llmserve.linear %in, %win : tensor<?x32xf32>, tensor<32x32xf32> -> tensor<?x32xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                         iterator_types = ["parallel", "parallel"]}
        ins(%y : tensor<?x32xf32>) outs(%y : tensor<?x32xf32>) {
    ^bb0(%a: f32, %o: f32):
      linalg.yield %a : f32
    } -> tensor<?x32xf32>
    llmserve.yield %g : tensor<?x32xf32>
  }
  return %h : tensor<?x32xf32>
}

// -----

// int4 linears have only the rows8x64 kernel, which reads a weight op of
// whole groups of 8 rows.
func.func @linear_int4_rows(%x: tensor<?x128xf32>) -> tensor<?x4xf32> {
  %v = llmserve.weight "w" quantized int4_group128 values : tensor<4x128xi4>
  %s = llmserve.weight "w" quantized int4_group128 scales : tensor<4x1xf32>
  // expected-error @+1 {{'llmserve.linear' op has int4 weights, whose one CPU kernel needs a weight op, N a multiple of 8 and K of 128}}
  %y = llmserve.linear %x, %v scales %s : tensor<?x128xf32>, tensor<4x128xi4> -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

// An FP8 checkpoint's codes as stored (llmserve-read-fp8-weights, sm_90
// only): the CPU reads them dequantized.
func.func @linear_fp8(%x: tensor<?x256xf32>) -> tensor<?x128xf32> {
  %v = llmserve.weight "w" quantized fp8_block128 values from fp8_block128 : tensor<128x256xf8E4M3FN>
  %s = llmserve.weight "w" quantized fp8_block128 scales from fp8_block128 : tensor<1x2xf32>
  // expected-error @below {{'llmserve.linear' op has no CPU kernel for FP8 weights (llmc compile reads an FP8 checkpoint dequantized for the CPU)}}
  %y = llmserve.linear %x, %v scales %s : tensor<?x256xf32>, tensor<128x256xf8E4M3FN> -> tensor<?x128xf32>
  return %y : tensor<?x128xf32>
}

// -----

// W8A8 (llmc compile --fp8-activations, sm_90 only).
func.func @quantize_fp8(%x: tensor<?x256xf32>) -> tensor<?x256xf8E4M3FN> {
  // expected-error @below {{'llmserve.quantize_fp8' op has no CPU kernel}}
  %c, %s = llmserve.quantize_fp8 %x : tensor<?x256xf32> -> tensor<?x256xf8E4M3FN>
  return %c : tensor<?x256xf8E4M3FN>
}
