// RUN: %llmserve-opt %s -llmserve-to-gpu-kernels -split-input-file -verify-diagnostics

// int8 experts have CPU kernels only.
func.func @expert_linear_int8(%x: tensor<?x64xf32>, %e: tensor<?x2xi32>) -> tensor<?x32xf32> {
  %v = llmserve.weight "e.{}.w" stacked 4 quantized int8_channel values : tensor<4x32x64xi8>
  %s = llmserve.weight "e.{}.w" stacked 4 quantized int8_channel scales : tensor<4x32xf32>
  // expected-error @below {{'llmserve.expert_linear' op has no sm_90 kernel for int8 experts (llmc compile --quantize leaves them unquantized for sm_90)}}
  %y = llmserve.expert_linear %x, %v scales %s experts %e per_slot : tensor<?x64xf32>, tensor<4x32x64xi8>, tensor<?x2xi32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// A dispatch region runs on sm_90 only as sibling linears: here a linear's
// result goes to an elementwise op inside the region.
func.func @region_with_epilogue(%x: tensor<?x64xbf16>) -> tensor<?x32xbf16> {
  %w = llmserve.weight "w" : tensor<32x64xbf16>
  // expected-error @below {{'llmserve.dispatch_region' op has no GPU kernel: expected linears of its first input (not f32), with the same input scales and weights of one element type, yielding their results in order}}
  %y = llmserve.dispatch_region(%x, %w) : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16> {
  ^bb0(%in: tensor<?x64xbf16>, %win: tensor<32x64xbf16>):
    %g = llmserve.linear %in, %win : tensor<?x64xbf16>, tensor<32x64xbf16> -> tensor<?x32xbf16>
    %u = llmserve.linear %in, %win : tensor<?x64xbf16>, tensor<32x64xbf16> -> tensor<?x32xbf16>
    %h = llmserve.silu_mul %g, %u : tensor<?x32xbf16>
    llmserve.yield %h : tensor<?x32xbf16>
  }
  return %y : tensor<?x32xbf16>
}

// -----

// Linears of different weight types cannot share their stages.
func.func @region_of_two_weight_types(%x: tensor<?x64xbf16>) -> (tensor<?x32xbf16>, tensor<?x32xbf16>) {
  %w = llmserve.weight "w" : tensor<32x64xbf16>
  %w8 = llmserve.weight "w8" quantized int8_channel values : tensor<32x64xi8>
  %s8 = llmserve.weight "w8" quantized int8_channel scales : tensor<32xf32>
  // expected-error @below {{'llmserve.dispatch_region' op has no GPU kernel}}
  %y:2 = llmserve.dispatch_region(%x, %w, %w8, %s8) : (tensor<?x64xbf16>, tensor<32x64xbf16>, tensor<32x64xi8>, tensor<32xf32>) -> (tensor<?x32xbf16>, tensor<?x32xbf16>) {
  ^bb0(%in: tensor<?x64xbf16>, %win: tensor<32x64xbf16>, %v: tensor<32x64xi8>, %s: tensor<32xf32>):
    %a = llmserve.linear %in, %win : tensor<?x64xbf16>, tensor<32x64xbf16> -> tensor<?x32xbf16>
    %b = llmserve.linear %in, %v scales %s : tensor<?x64xbf16>, tensor<32x64xi8> -> tensor<?x32xbf16>
    llmserve.yield %a, %b : tensor<?x32xbf16>, tensor<?x32xbf16>
  }
  return %y#0, %y#1 : tensor<?x32xbf16>, tensor<?x32xbf16>
}

// -----

// f32 linears have no tensor-core kernel to share.
func.func @region_of_f32(%x: tensor<?x64xf32>) -> (tensor<?x32xf32>, tensor<?x32xf32>) {
  %w = llmserve.weight "w" : tensor<32x64xf32>
  // expected-error @below {{'llmserve.dispatch_region' op has no GPU kernel}}
  %y:2 = llmserve.dispatch_region(%x, %w) : (tensor<?x64xf32>, tensor<32x64xf32>) -> (tensor<?x32xf32>, tensor<?x32xf32>) {
  ^bb0(%in: tensor<?x64xf32>, %win: tensor<32x64xf32>):
    %a = llmserve.linear %in, %win : tensor<?x64xf32>, tensor<32x64xf32> -> tensor<?x32xf32>
    %b = llmserve.linear %in, %win : tensor<?x64xf32>, tensor<32x64xf32> -> tensor<?x32xf32>
    llmserve.yield %a, %b : tensor<?x32xf32>, tensor<?x32xf32>
  }
  return %y#0, %y#1 : tensor<?x32xf32>, tensor<?x32xf32>
}

// -----

// Ropes of one kernel share one frequency table: one set of attributes.
func.func @region_of_two_thetas(%pos: tensor<?xi32>, %q: tensor<?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  // expected-error @below {{'llmserve.dispatch_region' op has no GPU kernel: expected ropes of one position array, without context lengths and with the same attributes, then kv_writes of inputs or of those ropes' results into caches given as inputs}}
  %r:2 = llmserve.dispatch_region(%pos, %q) : (tensor<?xi32>, tensor<?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  ^bb0(%p: tensor<?xi32>, %x: tensor<?x64xbf16>):
    %a = llmserve.rope %x, %p style neox head_dim 16 rotary_dim 16 theta 1.000000e+04 : tensor<?x64xbf16>, tensor<?xi32>
    %b = llmserve.rope %x, %p style neox head_dim 16 rotary_dim 16 theta 5.000000e+05 : tensor<?x64xbf16>, tensor<?xi32>
    llmserve.yield %a, %b : tensor<?x64xbf16>, tensor<?x64xbf16>
  }
  return %r#0, %r#1 : tensor<?x64xbf16>, tensor<?x64xbf16>
}

// -----

// A kernel writes each rotated key once, as it computes it.
func.func @region_writing_a_rope_twice(%pos: tensor<?xi32>, %k: tensor<?x32xbf16>, %slots: tensor<?xi32>, %c1: tensor<?x4x2x16xbf16>, %c2: tensor<?x4x2x16xbf16>) -> (tensor<?x4x2x16xbf16>, tensor<?x4x2x16xbf16>) {
  // expected-error @below {{'llmserve.dispatch_region' op has no GPU kernel: expected ropes}}
  %r:2 = llmserve.dispatch_region(%pos, %k, %slots, %c1, %c2) : (tensor<?xi32>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?x4x2x16xbf16>, tensor<?x4x2x16xbf16>) -> (tensor<?x4x2x16xbf16>, tensor<?x4x2x16xbf16>) {
  ^bb0(%p: tensor<?xi32>, %x: tensor<?x32xbf16>, %s: tensor<?xi32>, %a: tensor<?x4x2x16xbf16>, %b: tensor<?x4x2x16xbf16>):
    %y = llmserve.rope %x, %p style neox head_dim 16 rotary_dim 16 theta 1.000000e+04 : tensor<?x32xbf16>, tensor<?xi32>
    %w1 = llmserve.kv_write %y into %a at %s : tensor<?x32xbf16>, tensor<?x4x2x16xbf16>, tensor<?xi32>
    %w2 = llmserve.kv_write %y into %b at %s : tensor<?x32xbf16>, tensor<?x4x2x16xbf16>, tensor<?xi32>
    llmserve.yield %w1, %w2 : tensor<?x4x2x16xbf16>, tensor<?x4x2x16xbf16>
  }
  return %r#0, %r#1 : tensor<?x4x2x16xbf16>, tensor<?x4x2x16xbf16>
}

// -----

// A kernel's writes update caches bound to it, not another write's result.
func.func @region_writing_a_written_cache(%k: tensor<?x32xbf16>, %slots: tensor<?xi32>, %c: tensor<?x4x2x16xbf16>) -> tensor<?x4x2x16xbf16> {
  // expected-error @below {{'llmserve.dispatch_region' op has no GPU kernel: expected ropes}}
  %r = llmserve.dispatch_region(%k, %slots, %c) : (tensor<?x32xbf16>, tensor<?xi32>, tensor<?x4x2x16xbf16>) -> tensor<?x4x2x16xbf16> {
  ^bb0(%x: tensor<?x32xbf16>, %s: tensor<?xi32>, %a: tensor<?x4x2x16xbf16>):
    %w1 = llmserve.kv_write %x into %a at %s : tensor<?x32xbf16>, tensor<?x4x2x16xbf16>, tensor<?xi32>
    %w2 = llmserve.kv_write %x into %w1 at %s : tensor<?x32xbf16>, tensor<?x4x2x16xbf16>, tensor<?xi32>
    llmserve.yield %w2 : tensor<?x4x2x16xbf16>
  }
  return %r : tensor<?x4x2x16xbf16>
}

// -----

// The ropes come first: a rope after a write has no place in the kernel.
func.func @region_rope_after_write(%pos: tensor<?xi32>, %k: tensor<?x32xbf16>, %slots: tensor<?xi32>, %c: tensor<?x4x2x16xbf16>) -> (tensor<?x4x2x16xbf16>, tensor<?x32xbf16>) {
  // expected-error @below {{'llmserve.dispatch_region' op has no GPU kernel: expected ropes}}
  %r:2 = llmserve.dispatch_region(%pos, %k, %slots, %c) : (tensor<?xi32>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?x4x2x16xbf16>) -> (tensor<?x4x2x16xbf16>, tensor<?x32xbf16>) {
  ^bb0(%p: tensor<?xi32>, %x: tensor<?x32xbf16>, %s: tensor<?xi32>, %a: tensor<?x4x2x16xbf16>):
    %w = llmserve.kv_write %x into %a at %s : tensor<?x32xbf16>, tensor<?x4x2x16xbf16>, tensor<?xi32>
    %y = llmserve.rope %x, %p style neox head_dim 16 rotary_dim 16 theta 1.000000e+04 : tensor<?x32xbf16>, tensor<?xi32>
    llmserve.yield %w, %y : tensor<?x4x2x16xbf16>, tensor<?x32xbf16>
  }
  return %r#0, %r#1 : tensor<?x4x2x16xbf16>, tensor<?x32xbf16>
}

// -----

// Other dispatch regions (the CPU's linears with an elementwise epilogue
// start with a linear; this one with an elementwise op) have no sm_90
// kernel.
func.func @region_of_silu_mul(%x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  // expected-error @below {{'llmserve.dispatch_region' op has no GPU kernel: sm_90 runs dispatch regions of sibling linears, or of ropes and kv_writes}}
  %r = llmserve.dispatch_region(%x) : (tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  ^bb0(%in: tensor<?x64xbf16>):
    %y = llmserve.silu_mul %in, %in : tensor<?x64xbf16>
    llmserve.yield %y : tensor<?x64xbf16>
  }
  return %r : tensor<?x64xbf16>
}
