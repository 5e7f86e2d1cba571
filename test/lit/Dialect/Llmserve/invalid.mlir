// Every verifier rule of the llmserve ops, each with the message it gives.
// RUN: %llmserve-opt %s -split-input-file -verify-diagnostics

//===----------------------------------------------------------------------===//
// weight
//===----------------------------------------------------------------------===//

func.func @weight_empty_name() {
  // expected-error @+1 {{'llmserve.weight' op tensor_name must not be empty}}
  %w = llmserve.weight "" : tensor<4x4xf32>
  return
}

// -----

func.func @weight_dynamic() {
  // expected-error @+1 {{'llmserve.weight' op result must be statically shaped, got 'tensor<?x4xf32>'}}
  %w = llmserve.weight "w" : tensor<?x4xf32>
  return
}

// -----

func.func @weight_transposed_rank() {
  // expected-error @+1 {{'llmserve.weight' op a transposed weight must be 2-D, got rank 1}}
  %w = llmserve.weight "w" transposed : tensor<4xf32>
  return
}

// -----

func.func @weight_rows_scalar() {
  // expected-error @+1 {{'llmserve.weight' op rows needs a result of rank 1 or more}}
  %w = llmserve.weight "w" rows [0, 1] : tensor<f32>
  return
}

// -----

func.func @weight_rows_count() {
  // expected-error @+1 {{'llmserve.weight' op rows must be [begin, end] with 0 <= begin < end}}
  %w = llmserve.weight "w" rows [0, 4, 8] : tensor<4x4xf32>
  return
}

// -----

func.func @weight_rows_negative() {
  // expected-error @+1 {{'llmserve.weight' op rows must be [begin, end] with 0 <= begin < end}}
  %w = llmserve.weight "w" rows [-4, 0] : tensor<4x4xf32>
  return
}

// -----

func.func @weight_rows_empty() {
  // expected-error @+1 {{'llmserve.weight' op rows must be [begin, end] with 0 <= begin < end}}
  %w = llmserve.weight "w" rows [4, 4] : tensor<4x4xf32>
  return
}

// -----

func.func @weight_unquantized_integer() {
  // expected-error @+1 {{'llmserve.weight' op an unquantized weight must be a float tensor, got 'tensor<4x4xi8>'}}
  %w = llmserve.weight "w" : tensor<4x4xi8>
  return
}

// -----

func.func @weight_quantization_without_part() {
  // expected-error @+1 {{'llmserve.weight' op quantization and part go together}}
  %w = "llmserve.weight"() {tensor_name = "w", quantization = #llmserve<weight_quantization int8_channel>} : () -> tensor<4x4xi8>
  return
}

// -----

func.func @weight_quantized_values_type() {
  // expected-error @+1 {{'llmserve.weight' op the values of an int8_channel weight are a 2-D i8 tensor, got 'tensor<4x4xf32>'}}
  %w = llmserve.weight "w" quantized int8_channel values : tensor<4x4xf32>
  return
}

// -----

func.func @weight_int4_values_type() {
  // expected-error @+1 {{'llmserve.weight' op the values of an int4_group128 weight are a 2-D i4 tensor of a multiple of 128 columns, got 'tensor<4x128xi8>'}}
  %w = llmserve.weight "w" quantized int4_group128 values : tensor<4x128xi8>
  return
}

// -----

func.func @weight_int4_values_columns() {
  // expected-error @+1 {{'llmserve.weight' op the values of an int4_group128 weight are a 2-D i4 tensor of a multiple of 128 columns, got 'tensor<4x64xi4>'}}
  %w = llmserve.weight "w" quantized int4_group128 values : tensor<4x64xi4>
  return
}

// -----

func.func @weight_int4_scales_type() {
  // expected-error @+1 {{'llmserve.weight' op the scales of an int4_group128 weight are a 2-D f32 tensor (one per row and group of 128 columns), got 'tensor<4xf32>'}}
  %w = llmserve.weight "w" quantized int4_group128 scales : tensor<4xf32>
  return
}

// -----

func.func @weight_quantized_scales_type() {
  // expected-error @+1 {{'llmserve.weight' op the scales of an int8_channel weight are a 1-D f32 tensor (one per row), got 'tensor<4x1xf32>'}}
  %w = llmserve.weight "w" quantized int8_channel scales : tensor<4x1xf32>
  return
}

// -----

func.func @weight_rows_size() {
  // expected-error @+1 {{'llmserve.weight' op rows [0, 8] select 8 rows but the result has 4}}
  %w = llmserve.weight "w" transposed rows [0, 8] : tensor<4x4xf32>
  return
}

// -----

func.func @weight_not_float() {
  // expected-error @+1 {{'llmserve.weight' op result #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type or 8-bit signless integer or 4-bit signless integer or f8E4M3FN type values, but got 'tensor<4xi32>'}}
  %w = llmserve.weight "w" : tensor<4xi32>
  return
}

func.func @weight_zeros_without_checkpoint() {
  // expected-error @+1 {{'llmserve.weight' op zeros come from a 4-bit checkpoint ('from gptq', 'from gptq_v2', 'from awq' or 'from compressed_tensors_int4')}}
  %w = llmserve.weight "w" quantized int4_group128 zeros : tensor<4x1xi8>
  return
}

// -----

func.func @weight_fp8_without_checkpoint() {
  // expected-error @+1 {{'llmserve.weight' op fp8_block128 arrays are an FP8 checkpoint's (from fp8_block128), untransposed and unstacked}}
  %w = llmserve.weight "w" quantized fp8_block128 values : tensor<4x128xf8E4M3FN>
  return
}

// -----

func.func @weight_fp8_rows_within_a_block() {
  // expected-error @+1 {{'llmserve.weight' op the rows of fp8_block128 arrays start at a block of 128 rows, got 64}}
  %w = llmserve.weight "w" rows [64, 192] quantized fp8_block128 values from fp8_block128 : tensor<128x128xf8E4M3FN>
  return
}

// -----

func.func @weight_fp8_values_type() {
  // expected-error @+1 {{'llmserve.weight' op the values of an fp8_block128 weight are a 2-D f8E4M3FN tensor, got 'tensor<4x128xi8>'}}
  %w = llmserve.weight "w" quantized fp8_block128 values from fp8_block128 : tensor<4x128xi8>
  return
}

// -----

func.func @weight_fp8_scales_type() {
  // expected-error @+1 {{'llmserve.weight' op the scales of an fp8_block128 weight are a 2-D f32 tensor (one per block of 128 x 128), got 'tensor<4xf32>'}}
  %w = llmserve.weight "w" quantized fp8_block128 scales from fp8_block128 : tensor<4xf32>
  return
}

// -----

func.func @weight_fp8_scales_of_rows() {
  // expected-error @+1 {{'llmserve.weight' op rows [128, 300] span 2 blocks of 128 rows, but the scales have 3}}
  %w = llmserve.weight "w" rows [128, 300] quantized fp8_block128 scales from fp8_block128 : tensor<3x1xf32>
  return
}

// -----

func.func @linear_fp8_scales_shape(%x: tensor<?x256xbf16>, %w: tensor<200x256xf8E4M3FN>, %s: tensor<200x2xf32>) {
  // expected-error @+1 {{'llmserve.linear' op failed to verify that scales has one f32 per row of an i8 weight, per row and group of 128 columns of an i4 one, and per block of 128 x 128 of an f8E4M3FN one}}
  %y = "llmserve.linear"(%x, %w, %s) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>} : (tensor<?x256xbf16>, tensor<200x256xf8E4M3FN>, tensor<200x2xf32>) -> tensor<?x200xbf16>
  return
}

// -----

func.func @weight_zeros_from_fp8() {
  // expected-error @+1 {{'llmserve.weight' op zeros come from a 4-bit checkpoint ('from gptq', 'from gptq_v2', 'from awq' or 'from compressed_tensors_int4')}}
  %w = llmserve.weight "w" quantized int4_group128 zeros from fp8_block128 : tensor<4x1xi8>
  return
}

// -----

func.func @weight_checkpoint_transposed() {
  // expected-error @+1 {{'llmserve.weight' op a weight from a 4-bit checkpoint is an untransposed, unstacked linear}}
  %w = llmserve.weight "w" transposed from awq : tensor<4x128xf32>
  return
}

// -----

func.func @weight_zeros_shape() {
  // expected-error @+1 {{'llmserve.weight' op the zeros of an int4_group128 weight are a 2-D i8 tensor (one per row and group of 128 columns), got 'tensor<4xi8>'}}
  %w = llmserve.weight "w" quantized int4_group128 zeros from gptq : tensor<4xi8>
  return
}

// -----

func.func @weight_stacked_count() {
  // expected-error @+1 {{'llmserve.weight' op stacked must be positive, got 0}}
  %w = llmserve.weight "e.{}.w" stacked 0 : tensor<1x4x4xf32>
  return
}

// -----

func.func @weight_stacked_name() {
  // expected-error @+1 {{'llmserve.weight' op the tensor_name of a stacked weight must hold '{}' once, where the index goes, got 'e.w'}}
  %w = llmserve.weight "e.w" stacked 2 : tensor<2x4x4xf32>
  return
}

// -----

func.func @weight_stacked_name_twice() {
  // expected-error @+1 {{must hold '{}' once}}
  %w = llmserve.weight "e.{}.w.{}" stacked 2 : tensor<2x4x4xf32>
  return
}

// -----

func.func @weight_stacked_shape() {
  // expected-error @+1 {{'llmserve.weight' op a weight of 2 stacked tensors has a result of rank 2 or more whose dim 0 is 2, got 'tensor<3x4xf32>'}}
  %w = llmserve.weight "e.{}.w" stacked 2 : tensor<3x4xf32>
  return
}

// -----

func.func @weight_stacked_transposed() {
  // expected-error @+1 {{'llmserve.weight' op a transposed weight must be 3-D (stacked 2-D tensors), got rank 2}}
  %w = llmserve.weight "e.{}.w" stacked 2 transposed : tensor<2x4xf32>
  return
}

// -----

func.func @weight_stacked_rows() {
  // expected-error @+1 {{'llmserve.weight' op rows [0, 2] select 2 rows but the result has 4}}
  %w = llmserve.weight "e.{}.w" stacked 2 rows [0, 2] : tensor<2x4x4xf32>
  return
}

// -----

func.func @weight_stacked_int4() {
  // expected-error @+1 {{'llmserve.weight' op a stacked weight is quantized by int8_channel only}}
  %w = llmserve.weight "e.{}.w" stacked 2 quantized int4_group128 values : tensor<2x4x128xi4>
  return
}

// -----

func.func @weight_stacked_values_rank() {
  // expected-error @+1 {{'llmserve.weight' op the values of an int8_channel stacked weight are a 3-D i8 tensor, got 'tensor<2x4xi8>'}}
  %w = llmserve.weight "e.{}.w" stacked 2 quantized int8_channel values : tensor<2x4xi8>
  return
}

// -----

func.func @weight_stacked_scales_rank() {
  // expected-error @+1 {{'llmserve.weight' op the scales of an int8_channel weight are a 2-D f32 tensor (one per expert and row), got 'tensor<2x4x4xf32>'}}
  %w = llmserve.weight "e.{}.w" stacked 2 quantized int8_channel scales : tensor<2x4x4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// embedding
//===----------------------------------------------------------------------===//

// -----

func.func @embedding_element_type(%table: tensor<100x8xf32>, %ids: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.embedding' op result element type 'f16' must equal table element type 'f32'}}
  %x = llmserve.embedding %table, %ids : tensor<100x8xf32>, tensor<?xi32> -> tensor<?x8xf16>
  return
}

// -----

func.func @embedding_tokens(%table: tensor<100x8xf32>, %ids: tensor<3xi32>) {
  // expected-error @+1 {{'llmserve.embedding' op result dim 0 (4) must equal ids dim 0 (3)}}
  %x = llmserve.embedding %table, %ids : tensor<100x8xf32>, tensor<3xi32> -> tensor<4x8xf32>
  return
}

// -----

func.func @embedding_width(%table: tensor<100x8xf32>, %ids: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.embedding' op result dim 1 (16) must equal table dim 1 (8)}}
  %x = llmserve.embedding %table, %ids : tensor<100x8xf32>, tensor<?xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @embedding_ids_type(%table: tensor<100x8xf32>, %ids: tensor<?xi64>) {
  // expected-error @+1 {{'llmserve.embedding' op operand #1 must be 1D tensor of 32-bit signless integer values, but got 'tensor<?xi64>'}}
  %x = llmserve.embedding %table, %ids : tensor<100x8xf32>, tensor<?xi64> -> tensor<?x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// embedding
//===----------------------------------------------------------------------===//

// -----

func.func @embedding_scale(%t: tensor<10x8xf32>, %ids: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.embedding' op scale must be finite}}
  %x = llmserve.embedding %t, %ids scale 0x7FC00000 : tensor<10x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// rms_norm, layer_norm
//===----------------------------------------------------------------------===//

// -----

func.func @rms_norm_weight_type(%x: tensor<?x8xf32>, %w: tensor<8xf16>) {
  // expected-error @+1 {{'llmserve.rms_norm' op weight element type 'f16' must equal input element type 'f32'}}
  %y = llmserve.rms_norm %x, %w epsilon 1.0e-06 : tensor<?x8xf32>, tensor<8xf16>
  return
}

// -----

func.func @rms_norm_weight_size(%x: tensor<?x8xf32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{'llmserve.rms_norm' op weight dim 0 (16) must divide input dim 1 (8)}}
  %y = llmserve.rms_norm %x, %w epsilon 1.0e-06 : tensor<?x8xf32>, tensor<16xf32>
  return
}

// -----

func.func @rms_norm_weight_offset(%x: tensor<?x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'llmserve.rms_norm' op weight_offset must be finite}}
  %y = llmserve.rms_norm %x, %w epsilon 1.0e-06 weight_offset 0x7F800000 : tensor<?x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @rms_norm_group_size(%x: tensor<?x8xf32>, %w: tensor<3xf32>) {
  // expected-error @+1 {{'llmserve.rms_norm' op weight dim 0 (3) must divide input dim 1 (8)}}
  %y = llmserve.rms_norm %x, %w epsilon 1.0e-06 : tensor<?x8xf32>, tensor<3xf32>
  return
}

// -----

func.func @rms_norm_residual_type(%x: tensor<?x8xf32>, %w: tensor<8xf32>, %r: tensor<4x8xf32>) {
  // expected-error @+1 {{'llmserve.rms_norm' op residual type 'tensor<4x8xf32>' must equal input type 'tensor<?x8xf32>'}}
  %y, %s = llmserve.rms_norm %x, %w residual %r epsilon 1.0e-06 : tensor<?x8xf32>, tensor<8xf32>, tensor<4x8xf32>
  return
}

// -----

func.func @rms_norm_epsilon(%x: tensor<?x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'llmserve.rms_norm' op epsilon must be non-negative, got -1}}
  %y = llmserve.rms_norm %x, %w epsilon -1.0 : tensor<?x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @rms_norm_result_type(%x: tensor<?x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+2 {{'llmserve.rms_norm' op failed to infer returned types}}
  // expected-error @+1 {{'llmserve.rms_norm' op inferred type(s) 'tensor<?x8xf32>' are incompatible with return type(s) of operation 'tensor<4x8xf32>'}}
  %y = "llmserve.rms_norm"(%x, %w) <{epsilon = 1.0e-06 : f32}> : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @rms_norm_missing_residual_out(%x: tensor<?x8xf32>, %w: tensor<8xf32>, %r: tensor<?x8xf32>) {
  // expected-error @+2 {{'llmserve.rms_norm' op failed to infer returned types}}
  // expected-error @+1 {{'llmserve.rms_norm' op inferred type(s) 'tensor<?x8xf32>', 'tensor<?x8xf32>' are incompatible with return type(s) of operation 'tensor<?x8xf32>'}}
  %y = "llmserve.rms_norm"(%x, %w, %r) <{epsilon = 1.0e-06 : f32}> : (tensor<?x8xf32>, tensor<8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @layer_norm_weight_type(%x: tensor<?x8xbf16>, %w: tensor<8xf32>, %b: tensor<8xbf16>) {
  // expected-error @+1 {{'llmserve.layer_norm' op weight element type 'f32' must equal input element type 'bf16'}}
  %y = llmserve.layer_norm %x, %w, %b epsilon 1.0e-05 : tensor<?x8xbf16>, tensor<8xf32>, tensor<8xbf16>
  return
}

// -----

func.func @layer_norm_weight_size(%x: tensor<?x8xbf16>, %w: tensor<3xbf16>, %b: tensor<3xbf16>) {
  // expected-error @+1 {{'llmserve.layer_norm' op weight dim 0 (3) must divide input dim 1 (8)}}
  %y = llmserve.layer_norm %x, %w, %b epsilon 1.0e-05 : tensor<?x8xbf16>, tensor<3xbf16>, tensor<3xbf16>
  return
}

// -----

func.func @layer_norm_bias_type(%x: tensor<?x8xbf16>, %w: tensor<8xbf16>, %b: tensor<8xf16>) {
  // expected-error @+1 {{'llmserve.layer_norm' op bias element type 'f16' must equal input element type 'bf16'}}
  %y = llmserve.layer_norm %x, %w, %b epsilon 1.0e-05 : tensor<?x8xbf16>, tensor<8xbf16>, tensor<8xf16>
  return
}

// -----

func.func @layer_norm_bias_size(%x: tensor<?x8xbf16>, %w: tensor<8xbf16>, %b: tensor<9xbf16>) {
  // expected-error @+1 {{'llmserve.layer_norm' op bias dim 0 (9) must equal weight dim 0 (8)}}
  %y = llmserve.layer_norm %x, %w, %b epsilon 1.0e-05 : tensor<?x8xbf16>, tensor<8xbf16>, tensor<9xbf16>
  return
}

// -----

func.func @layer_norm_residual_type(%x: tensor<?x8xbf16>, %w: tensor<8xbf16>, %b: tensor<8xbf16>, %r: tensor<?x8xf32>) {
  // expected-error @+1 {{'llmserve.layer_norm' op residual type 'tensor<?x8xf32>' must equal input type 'tensor<?x8xbf16>'}}
  %y, %s = llmserve.layer_norm %x, %w, %b residual %r epsilon 1.0e-05 : tensor<?x8xbf16>, tensor<8xbf16>, tensor<8xbf16>, tensor<?x8xf32>
  return
}

// -----

func.func @layer_norm_epsilon(%x: tensor<?x8xbf16>, %w: tensor<8xbf16>, %b: tensor<8xbf16>) {
  // expected-error @+1 {{'llmserve.layer_norm' op epsilon must be non-negative, got -0.5}}
  %y = llmserve.layer_norm %x, %w, %b epsilon -0.5 : tensor<?x8xbf16>, tensor<8xbf16>, tensor<8xbf16>
  return
}

// -----

func.func @layer_norm_rank(%x: tensor<8xbf16>, %w: tensor<8xbf16>, %b: tensor<8xbf16>) {
  // expected-error @+1 {{'llmserve.layer_norm' op operand #0 must be 2D tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<8xbf16>'}}
  %y = llmserve.layer_norm %x, %w, %b epsilon 1.0e-05 : tensor<8xbf16>, tensor<8xbf16>, tensor<8xbf16>
  return
}

//===----------------------------------------------------------------------===//
// linear
//===----------------------------------------------------------------------===//

// -----

// An f32 input may read a narrow weight, not the other way round.
func.func @linear_weight_type(%x: tensor<?x8xbf16>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'llmserve.linear' op weight element type 'f32' must equal input element type 'bf16'}}
  %y = llmserve.linear %x, %w : tensor<?x8xbf16>, tensor<4x8xf32> -> tensor<?x4xbf16>
  return
}

// -----

func.func @linear_result_type(%x: tensor<?x8xf16>, %w: tensor<4x8xf16>) {
  // expected-error @+1 {{'llmserve.linear' op result element type 'bf16' must equal input element type 'f16'}}
  %y = llmserve.linear %x, %w : tensor<?x8xf16>, tensor<4x8xf16> -> tensor<?x4xbf16>
  return
}

// -----

func.func @linear_fp8_input_without_scales(%x: tensor<?x256xf8E4M3FN>, %w: tensor<4x256xf8E4M3FN>, %s: tensor<1x2xf32>) {
  // expected-error @+1 {{'llmserve.linear' op an f8E4M3FN input needs input_scales}}
  %y = llmserve.linear %x, %w scales %s : tensor<?x256xf8E4M3FN>, tensor<4x256xf8E4M3FN> -> tensor<?x4xbf16>
  return
}

// -----

func.func @linear_input_scales_of_float_input(%x: tensor<?x256xbf16>, %xs: tensor<?x2xf32>, %w: tensor<4x256xf8E4M3FN>, %s: tensor<1x2xf32>) {
  // expected-error @+1 {{'llmserve.linear' op input_scales go with an f8E4M3FN input only}}
  %y = "llmserve.linear"(%x, %w, %s, %xs) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 1>} : (tensor<?x256xbf16>, tensor<4x256xf8E4M3FN>, tensor<1x2xf32>, tensor<?x2xf32>) -> tensor<?x4xbf16>
  return
}

// -----

func.func @linear_fp8_input_of_float_weight(%x: tensor<?x256xf8E4M3FN>, %xs: tensor<?x2xf32>, %w: tensor<4x256xbf16>) {
  // expected-error @+1 {{'llmserve.linear' op an f8E4M3FN input needs an f8E4M3FN weight, got 'tensor<4x256xbf16>'}}
  %y = llmserve.linear %x input_scales %xs, %w : tensor<?x256xf8E4M3FN>, tensor<4x256xbf16> -> tensor<?x4xbf16>
  return
}

// -----

func.func @linear_fp8_input_scales_shape(%x: tensor<?x320xf8E4M3FN>, %xs: tensor<?x2xf32>, %w: tensor<4x320xf8E4M3FN>, %s: tensor<1x3xf32>) {
  // expected-error @+1 {{'llmserve.linear' op failed to verify that input_scales has one f32 per row and group of 128 columns of an f8E4M3FN input}}
  %y = "llmserve.linear"(%x, %w, %s, %xs) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 1>} : (tensor<?x320xf8E4M3FN>, tensor<4x320xf8E4M3FN>, tensor<1x3xf32>, tensor<?x2xf32>) -> tensor<?x4xbf16>
  return
}

// -----

func.func @linear_fp8_input_bias_type(%x: tensor<?x256xf8E4M3FN>, %xs: tensor<?x2xf32>, %w: tensor<4x256xf8E4M3FN>, %s: tensor<1x2xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'llmserve.linear' op bias element type 'f32' must equal result element type 'bf16'}}
  %y = llmserve.linear %x input_scales %xs, %w scales %s bias %b : tensor<?x256xf8E4M3FN>, tensor<4x256xf8E4M3FN>, tensor<4xf32> -> tensor<?x4xbf16>
  return
}

// -----

func.func @quantize_fp8_codes_shape(%x: tensor<?x256xbf16>) {
  // expected-error @+1 {{'llmserve.quantize_fp8' op codes dim 1 (128) must equal input dim 1 (256)}}
  %c, %s = "llmserve.quantize_fp8"(%x) : (tensor<?x256xbf16>) -> (tensor<?x128xf8E4M3FN>, tensor<?x2xf32>)
  return
}

// -----

func.func @quantize_fp8_scales_shape(%x: tensor<?x256xbf16>) {
  // expected-error @+1 {{'llmserve.quantize_fp8' op failed to verify that scales has one f32 per row and group of 128 columns of input}}
  %c, %s = "llmserve.quantize_fp8"(%x) : (tensor<?x256xbf16>) -> (tensor<?x256xf8E4M3FN>, tensor<?x3xf32>)
  return
}

// -----

func.func @linear_i8_without_scales(%x: tensor<?x8xf32>, %w: tensor<4x8xi8>) {
  // expected-error @+1 {{'llmserve.linear' op an i8, i4 or f8E4M3FN weight needs scales}}
  %y = llmserve.linear %x, %w : tensor<?x8xf32>, tensor<4x8xi8> -> tensor<?x4xf32>
  return
}

// -----

func.func @linear_scales_without_i8(%x: tensor<?x8xf32>, %w: tensor<4x8xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{'llmserve.linear' op scales go with an i8, i4 or f8E4M3FN weight only}}
  %y = llmserve.linear %x, %w scales %s : tensor<?x8xf32>, tensor<4x8xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @linear_zeros_with_i8(%x: tensor<?x8xf32>, %w: tensor<4x8xi8>, %s: tensor<4xf32>, %z: tensor<4x0xi8>) {
  // expected-error @+1 {{'llmserve.linear' op zeros go with an i4 weight only}}
  %y = llmserve.linear %x, %w scales %s zeros %z : tensor<?x8xf32>, tensor<4x8xi8> -> tensor<?x4xf32>
  return
}

// -----

func.func @linear_scales_shape(%x: tensor<?x8xf32>, %w: tensor<4x8xi8>, %s: tensor<8xf32>) {
  // expected-error @+1 {{'llmserve.linear' op failed to verify that scales has one f32 per row of an i8 weight, per row and group of 128 columns of an i4 one, and per block of 128 x 128 of an f8E4M3FN one}}
  %y = "llmserve.linear"(%x, %w, %s) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>} : (tensor<?x8xf32>, tensor<4x8xi8>, tensor<8xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @linear_int4_scales_shape(%x: tensor<?x256xf32>, %w: tensor<4x256xi4>, %s: tensor<4xf32>) {
  // expected-error @+1 {{'llmserve.linear' op failed to verify that scales has one f32 per row of an i8 weight, per row and group of 128 columns of an i4 one, and per block of 128 x 128 of an f8E4M3FN one}}
  %y = "llmserve.linear"(%x, %w, %s) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>} : (tensor<?x256xf32>, tensor<4x256xi4>, tensor<4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @linear_int4_partial_group(%x: tensor<?x192xf32>, %w: tensor<4x192xi4>, %s: tensor<4x1xf32>) {
  // expected-error @+1 {{'llmserve.linear' op an i4 weight has scales per group of 128 columns, so K must be a multiple of it, got 'tensor<4x192xi4>'}}
  %y = llmserve.linear %x, %w scales %s : tensor<?x192xf32>, tensor<4x192xi4> -> tensor<?x4xf32>
  return
}

// -----

func.func @linear_reduction(%x: tensor<?x8xf32>, %w: tensor<4x16xf32>) {
  // expected-error @+1 {{'llmserve.linear' op input dim 1 (8) must equal weight dim 1 (16)}}
  %y = llmserve.linear %x, %w : tensor<?x8xf32>, tensor<4x16xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @linear_rows(%x: tensor<3x8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'llmserve.linear' op result dim 0 (2) must equal input dim 0 (3)}}
  %y = llmserve.linear %x, %w : tensor<3x8xf32>, tensor<4x8xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @linear_columns(%x: tensor<?x8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'llmserve.linear' op result dim 1 (5) must equal weight dim 0 (4)}}
  %y = llmserve.linear %x, %w : tensor<?x8xf32>, tensor<4x8xf32> -> tensor<?x5xf32>
  return
}

// -----

func.func @linear_bias_type(%x: tensor<?x8xf32>, %w: tensor<4x8xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{'llmserve.linear' op bias element type 'f16' must equal input element type 'f32'}}
  %y = llmserve.linear %x, %w bias %b : tensor<?x8xf32>, tensor<4x8xf32>, tensor<4xf16> -> tensor<?x4xf32>
  return
}

// -----

func.func @linear_bias_size(%x: tensor<?x8xf32>, %w: tensor<4x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'llmserve.linear' op bias dim 0 (8) must equal weight dim 0 (4)}}
  %y = llmserve.linear %x, %w bias %b : tensor<?x8xf32>, tensor<4x8xf32>, tensor<8xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @linear_not_float(%x: tensor<?x8xi32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{custom op 'llmserve.linear' 'input' must be 2D tensor of 32-bit float or 16-bit float or bfloat16 type or f8E4M3FN type values, but got 'tensor<?x8xi32>'}}
  %y = llmserve.linear %x, %w : tensor<?x8xi32>, tensor<4x8xf32> -> tensor<?x4xf32>
  return
}

//===----------------------------------------------------------------------===//
// rope
//===----------------------------------------------------------------------===//

// -----

func.func @rope_head_dim(%x: tensor<?x64xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op head_dim must be positive, got 0}}
  %y = llmserve.rope %x, %p style neox head_dim 0 rotary_dim 32 theta 1.0e4 : tensor<?x64xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_rotary_dim_positive(%x: tensor<?x64xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op rotary_dim must be positive, got -2}}
  %y = llmserve.rope %x, %p style neox head_dim 32 rotary_dim -2 theta 1.0e4 : tensor<?x64xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_theta(%x: tensor<?x64xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op theta must be positive, got 0}}
  %y = llmserve.rope %x, %p style neox head_dim 32 rotary_dim 32 theta 0.0 : tensor<?x64xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_rotary_dim_odd(%x: tensor<?x64xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op rotary_dim must be even, got 31}}
  %y = llmserve.rope %x, %p style neox head_dim 32 rotary_dim 31 theta 1.0e4 : tensor<?x64xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_rotary_dim_too_big(%x: tensor<?x64xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op rotary_dim (64) must not exceed head_dim (32)}}
  %y = llmserve.rope %x, %p style neox head_dim 32 rotary_dim 64 theta 1.0e4 : tensor<?x64xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_heads(%x: tensor<?x100xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op input dim 1 (100) must be a multiple of head_dim (32)}}
  %y = llmserve.rope %x, %p style neox head_dim 32 rotary_dim 32 theta 1.0e4 : tensor<?x100xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_positions(%x: tensor<4x64xf32>, %p: tensor<5xi32>) {
  // expected-error @+1 {{'llmserve.rope' op positions dim 0 (5) must equal input dim 0 (4)}}
  %y = llmserve.rope %x, %p style neox head_dim 32 rotary_dim 32 theta 1.0e4 : tensor<4x64xf32>, tensor<5xi32>
  return
}

// -----

func.func @rope_none_with_factor(%x: tensor<?x64xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op scaling none takes no scaling_factor}}
  %y = llmserve.rope %x, %p style neox head_dim 32 rotary_dim 32 theta 1.0e4 scaling_factor 2.0 : tensor<?x64xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_linear_without_factor(%x: tensor<?x64xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op scaling linear needs scaling_factor}}
  %y = llmserve.rope %x, %p style neox head_dim 32 rotary_dim 32 theta 1.0e4 scaling linear : tensor<?x64xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_linear_with_llama3_attr(%x: tensor<?x64xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op scaling linear takes no original_max_position}}
  %y = llmserve.rope %x, %p style neox head_dim 32 rotary_dim 32 theta 1.0e4 scaling linear scaling_factor 2.0 original_max_position 4096 : tensor<?x64xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_llama3_without_factor(%x: tensor<?x64xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op scaling llama3 needs scaling_factor}}
  %y = llmserve.rope %x, %p style neox head_dim 32 rotary_dim 32 theta 1.0e4 scaling llama3 low_freq_factor 1.0 high_freq_factor 4.0 original_max_position 8192 : tensor<?x64xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_llama3_without_low(%x: tensor<?x64xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op scaling llama3 needs low_freq_factor}}
  %y = llmserve.rope %x, %p style neox head_dim 32 rotary_dim 32 theta 1.0e4 scaling llama3 scaling_factor 8.0 high_freq_factor 4.0 original_max_position 8192 : tensor<?x64xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_llama3_without_high(%x: tensor<?x64xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op scaling llama3 needs high_freq_factor}}
  %y = llmserve.rope %x, %p style neox head_dim 32 rotary_dim 32 theta 1.0e4 scaling llama3 scaling_factor 8.0 low_freq_factor 1.0 original_max_position 8192 : tensor<?x64xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_llama3_without_max_position(%x: tensor<?x64xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op scaling llama3 needs original_max_position}}
  %y = llmserve.rope %x, %p style neox head_dim 32 rotary_dim 32 theta 1.0e4 scaling llama3 scaling_factor 8.0 low_freq_factor 1.0 high_freq_factor 4.0 : tensor<?x64xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_scaling_factor(%x: tensor<?x64xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op scaling_factor must be positive, got -2}}
  %y = llmserve.rope %x, %p style neox head_dim 32 rotary_dim 32 theta 1.0e4 scaling linear scaling_factor -2.0 : tensor<?x64xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_low_freq_factor(%x: tensor<?x64xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op low_freq_factor must be positive, got 0}}
  %y = llmserve.rope %x, %p style neox head_dim 32 rotary_dim 32 theta 1.0e4 scaling llama3 scaling_factor 8.0 low_freq_factor 0.0 high_freq_factor 4.0 original_max_position 8192 : tensor<?x64xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_original_max_position(%x: tensor<?x64xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op original_max_position must be positive, got 0}}
  %y = llmserve.rope %x, %p style neox head_dim 32 rotary_dim 32 theta 1.0e4 scaling llama3 scaling_factor 8.0 low_freq_factor 1.0 high_freq_factor 4.0 original_max_position 0 : tensor<?x64xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_llama3_band(%x: tensor<?x64xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op high_freq_factor (1) must exceed low_freq_factor (4)}}
  %y = llmserve.rope %x, %p style neox head_dim 32 rotary_dim 32 theta 1.0e4 scaling llama3 scaling_factor 8.0 low_freq_factor 4.0 high_freq_factor 1.0 original_max_position 8192 : tensor<?x64xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_longrope_without_sequences(%x: tensor<?x64xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op scaling longrope needs context_len}}
  %y = llmserve.rope %x, %p style neox head_dim 32 rotary_dim 8 theta 1.0e4 scaling longrope original_max_position 16 short_factor dense<[1.0, 1.0, 1.0, 1.0]> : tensor<4xf32> long_factor dense<[1.0, 2.0, 4.0, 8.0]> : tensor<4xf32> attention_factor 1.5 : tensor<?x64xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_longrope_without_query_start(%x: tensor<?x64xf32>, %p: tensor<?xi32>, %c: tensor<?xi32>, %q: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op scaling longrope needs query_start}}
  %y = "llmserve.rope"(%x, %p, %c) <{head_dim = 32 : i64, rotary_dim = 8 : i64, theta = 1.0e4 : f64, style = #llmserve<rope_style neox>, scaling = #llmserve<rope_scaling longrope>, original_max_position = 16 : i64, short_factor = dense<1.0> : tensor<4xf32>, long_factor = dense<[1.0, 2.0, 4.0, 8.0]> : tensor<4xf32>, attention_factor = 1.5 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0>}> : (tensor<?x64xf32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @rope_none_with_sequences(%x: tensor<?x64xf32>, %p: tensor<?xi32>, %c: tensor<?xi32>, %q: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op scaling none takes no context_len}}
  %y = llmserve.rope %x, %p context_len %c query_start %q style neox head_dim 32 rotary_dim 8 theta 1.0e4 : tensor<?x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  return
}

// -----

func.func @rope_longrope_without_max_position(%x: tensor<?x64xf32>, %p: tensor<?xi32>, %c: tensor<?xi32>, %q: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op scaling longrope needs original_max_position}}
  %y = llmserve.rope %x, %p context_len %c query_start %q style neox head_dim 32 rotary_dim 8 theta 1.0e4 scaling longrope short_factor dense<[1.0, 1.0, 1.0, 1.0]> : tensor<4xf32> long_factor dense<[1.0, 2.0, 4.0, 8.0]> : tensor<4xf32> attention_factor 1.5 : tensor<?x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  return
}

// -----

func.func @rope_longrope_without_short_factor(%x: tensor<?x64xf32>, %p: tensor<?xi32>, %c: tensor<?xi32>, %q: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op scaling longrope needs short_factor}}
  %y = llmserve.rope %x, %p context_len %c query_start %q style neox head_dim 32 rotary_dim 8 theta 1.0e4 scaling longrope original_max_position 16 long_factor dense<[1.0, 2.0, 4.0, 8.0]> : tensor<4xf32> attention_factor 1.5 : tensor<?x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  return
}

// -----

func.func @rope_longrope_without_long_factor(%x: tensor<?x64xf32>, %p: tensor<?xi32>, %c: tensor<?xi32>, %q: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op scaling longrope needs long_factor}}
  %y = llmserve.rope %x, %p context_len %c query_start %q style neox head_dim 32 rotary_dim 8 theta 1.0e4 scaling longrope original_max_position 16 short_factor dense<[1.0, 1.0, 1.0, 1.0]> : tensor<4xf32> attention_factor 1.5 : tensor<?x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  return
}

// -----

func.func @rope_longrope_without_attention_factor(%x: tensor<?x64xf32>, %p: tensor<?xi32>, %c: tensor<?xi32>, %q: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op scaling longrope needs attention_factor}}
  %y = llmserve.rope %x, %p context_len %c query_start %q style neox head_dim 32 rotary_dim 8 theta 1.0e4 scaling longrope original_max_position 16 short_factor dense<[1.0, 1.0, 1.0, 1.0]> : tensor<4xf32> long_factor dense<[1.0, 2.0, 4.0, 8.0]> : tensor<4xf32> : tensor<?x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  return
}

// -----

func.func @rope_longrope_with_scaling_factor(%x: tensor<?x64xf32>, %p: tensor<?xi32>, %c: tensor<?xi32>, %q: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op scaling longrope takes no scaling_factor}}
  %y = llmserve.rope %x, %p context_len %c query_start %q style neox head_dim 32 rotary_dim 8 theta 1.0e4 scaling longrope scaling_factor 2.0 original_max_position 16 short_factor dense<[1.0, 1.0, 1.0, 1.0]> : tensor<4xf32> long_factor dense<[1.0, 2.0, 4.0, 8.0]> : tensor<4xf32> attention_factor 1.5 : tensor<?x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  return
}

// -----

func.func @rope_llama3_with_long_factor(%x: tensor<?x64xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op scaling llama3 takes no long_factor}}
  %y = llmserve.rope %x, %p style neox head_dim 32 rotary_dim 32 theta 1.0e4 scaling llama3 scaling_factor 8.0 low_freq_factor 1.0 high_freq_factor 4.0 original_max_position 8192 long_factor dense<[1.0]> : tensor<1xf32> : tensor<?x64xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_short_factor_length(%x: tensor<?x64xf32>, %p: tensor<?xi32>, %c: tensor<?xi32>, %q: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op short_factor must hold rotary_dim / 2 = 4 factors, got 'tensor<3xf32>'}}
  %y = llmserve.rope %x, %p context_len %c query_start %q style neox head_dim 32 rotary_dim 8 theta 1.0e4 scaling longrope original_max_position 16 short_factor dense<[1.0, 1.0, 1.0]> : tensor<3xf32> long_factor dense<[1.0, 2.0, 4.0, 8.0]> : tensor<4xf32> attention_factor 1.5 : tensor<?x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  return
}

// -----

func.func @rope_long_factor_positive(%x: tensor<?x64xf32>, %p: tensor<?xi32>, %c: tensor<?xi32>, %q: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op long_factor entries must be positive and finite}}
  %y = llmserve.rope %x, %p context_len %c query_start %q style neox head_dim 32 rotary_dim 8 theta 1.0e4 scaling longrope original_max_position 16 short_factor dense<[1.0, 1.0, 1.0, 1.0]> : tensor<4xf32> long_factor dense<[1.0, 0.0, 4.0, 8.0]> : tensor<4xf32> attention_factor 1.5 : tensor<?x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  return
}

// -----

func.func @rope_short_factor_finite(%x: tensor<?x64xf32>, %p: tensor<?xi32>, %c: tensor<?xi32>, %q: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op short_factor entries must be positive and finite}}
  %y = llmserve.rope %x, %p context_len %c query_start %q style neox head_dim 32 rotary_dim 8 theta 1.0e4 scaling longrope original_max_position 16 short_factor dense<[1.0, 0x7F800000, 1.0, 1.0]> : tensor<4xf32> long_factor dense<[1.0, 2.0, 4.0, 8.0]> : tensor<4xf32> attention_factor 1.5 : tensor<?x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  return
}

// -----

func.func @rope_attention_factor(%x: tensor<?x64xf32>, %p: tensor<?xi32>, %c: tensor<?xi32>, %q: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op attention_factor must be positive and finite, got 0}}
  %y = llmserve.rope %x, %p context_len %c query_start %q style neox head_dim 32 rotary_dim 8 theta 1.0e4 scaling longrope original_max_position 16 short_factor dense<[1.0, 1.0, 1.0, 1.0]> : tensor<4xf32> long_factor dense<[1.0, 2.0, 4.0, 8.0]> : tensor<4xf32> attention_factor 0.0 : tensor<?x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  return
}

// -----

func.func @rope_longrope_max_position(%x: tensor<?x64xf32>, %p: tensor<?xi32>, %c: tensor<?xi32>, %q: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op original_max_position must be positive, got -1}}
  %y = llmserve.rope %x, %p context_len %c query_start %q style neox head_dim 32 rotary_dim 8 theta 1.0e4 scaling longrope original_max_position -1 short_factor dense<[1.0, 1.0, 1.0, 1.0]> : tensor<4xf32> long_factor dense<[1.0, 2.0, 4.0, 8.0]> : tensor<4xf32> attention_factor 1.5 : tensor<?x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  return
}

// -----

func.func @rope_query_start(%x: tensor<?x64xf32>, %p: tensor<?xi32>, %c: tensor<3xi32>, %q: tensor<3xi32>) {
  // expected-error @+1 {{'llmserve.rope' op query_start dim 0 (3) must equal context_len dim 0 (3) + 1}}
  %y = llmserve.rope %x, %p context_len %c query_start %q style neox head_dim 32 rotary_dim 8 theta 1.0e4 scaling longrope original_max_position 16 short_factor dense<[1.0, 1.0, 1.0, 1.0]> : tensor<4xf32> long_factor dense<[1.0, 2.0, 4.0, 8.0]> : tensor<4xf32> attention_factor 1.5 : tensor<?x64xf32>, tensor<?xi32>, tensor<3xi32>, tensor<3xi32>
  return
}

// -----

func.func @rope_context_len_type(%x: tensor<?x64xf32>, %p: tensor<?xi32>, %c: tensor<?xi64>, %q: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op operand #2 must be 1D tensor of 32-bit signless integer values, but got 'tensor<?xi64>'}}
  %y = llmserve.rope %x, %p context_len %c query_start %q style neox head_dim 32 rotary_dim 8 theta 1.0e4 scaling longrope original_max_position 16 short_factor dense<[1.0, 1.0, 1.0, 1.0]> : tensor<4xf32> long_factor dense<[1.0, 2.0, 4.0, 8.0]> : tensor<4xf32> attention_factor 1.5 : tensor<?x64xf32>, tensor<?xi32>, tensor<?xi64>, tensor<?xi32>
  return
}

// -----

func.func @rope_result_type(%x: tensor<?x64xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op failed to verify that all of {input, result} have same type}}
  %y = "llmserve.rope"(%x, %p) <{head_dim = 32 : i64, rotary_dim = 32 : i64, theta = 1.0e4 : f64, style = #llmserve<rope_style neox>, operandSegmentSizes = array<i32: 1, 1, 0, 0>}> : (tensor<?x64xf32>, tensor<?xi32>) -> tensor<4x64xf32>
  return
}

// -----

func.func @rope_unknown_style(%x: tensor<?x64xf32>, %p: tensor<?xi32>) {
  // expected-error @+2 {{expected one of [neox, gptj] for which pairs of a head's channels rotary embedding rotates together, got: llama}}
  // expected-error @+1 {{failed to parse Llmserve_RopeStyleAttr parameter 'value' which is to be a `::mlir::llmserve::RopeStyle`}}
  %y = llmserve.rope %x, %p style llama head_dim 32 rotary_dim 32 theta 1.0e4 : tensor<?x64xf32>, tensor<?xi32>
  return
}

//===----------------------------------------------------------------------===//
// kv_write
//===----------------------------------------------------------------------===//

// -----

func.func @kv_write_element_type(%k: tensor<?x128xf32>, %c: tensor<?x16x2x64xf16>, %s: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.kv_write' op input element type 'f32' must equal cache element type 'f16'}}
  %r = llmserve.kv_write %k into %c at %s : tensor<?x128xf32>, tensor<?x16x2x64xf16>, tensor<?xi32>
  return
}

// -----

func.func @kv_write_slots(%k: tensor<3x128xf16>, %c: tensor<?x16x2x64xf16>, %s: tensor<4xi32>) {
  // expected-error @+1 {{'llmserve.kv_write' op slot_mapping dim 0 (4) must equal input dim 0 (3)}}
  %r = llmserve.kv_write %k into %c at %s : tensor<3x128xf16>, tensor<?x16x2x64xf16>, tensor<4xi32>
  return
}

// -----

func.func @kv_write_width(%k: tensor<?x64xf16>, %c: tensor<?x16x2x64xf16>, %s: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.kv_write' op input dim 1 (64) must equal cache kv_heads x head_dim (2 x 64)}}
  %r = llmserve.kv_write %k into %c at %s : tensor<?x64xf16>, tensor<?x16x2x64xf16>, tensor<?xi32>
  return
}

// -----

func.func @kv_write_result_type(%k: tensor<?x128xf16>, %c: tensor<?x16x2x64xf16>, %s: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.kv_write' op failed to verify that all of {cache, result} have same type}}
  %r = "llmserve.kv_write"(%k, %c, %s) : (tensor<?x128xf16>, tensor<?x16x2x64xf16>, tensor<?xi32>) -> tensor<8x16x2x64xf16>
  return
}

// -----

func.func @kv_write_cache_rank(%k: tensor<?x128xf16>, %c: tensor<?x16x128xf16>, %s: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.kv_write' op operand #1 must be 4D tensor of 32-bit float or 16-bit float or bfloat16 type or f8E4M3FN type values, but got 'tensor<?x16x128xf16>'}}
  %r = "llmserve.kv_write"(%k, %c, %s) : (tensor<?x128xf16>, tensor<?x16x128xf16>, tensor<?xi32>) -> tensor<?x16x128xf16>
  return
}

// -----

func.func @kv_write_fp8_without_scale(%k: tensor<?x128xf32>, %c: tensor<?x16x2x64xf8E4M3FN>, %s: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.kv_write' op an f8E4M3FN cache needs its scale}}
  %r = llmserve.kv_write %k into %c at %s : tensor<?x128xf32>, tensor<?x16x2x64xf8E4M3FN>, tensor<?xi32>
  return
}

// -----

func.func @kv_write_scale_without_fp8(%k: tensor<?x128xf32>, %c: tensor<?x16x2x64xf32>, %s: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.kv_write' op scale applies to an f8E4M3FN cache only}}
  %r = llmserve.kv_write %k into %c at %s scale [1.0] : tensor<?x128xf32>, tensor<?x16x2x64xf32>, tensor<?xi32>
  return
}

// -----

func.func @kv_write_zero_scale(%k: tensor<?x128xf32>, %c: tensor<?x16x2x64xf8E4M3FN>, %s: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.kv_write' op scale entries must be positive and finite}}
  %r = llmserve.kv_write %k into %c at %s scale [0.5, 0.0] : tensor<?x128xf32>, tensor<?x16x2x64xf8E4M3FN>, tensor<?xi32>
  return
}

// -----

func.func @kv_write_scale_per_query_head(%k: tensor<?x128xf32>, %c: tensor<?x16x2x64xf8E4M3FN>, %s: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.kv_write' op scale holds one scale or one per KV head (2), got 4}}
  %r = llmserve.kv_write %k into %c at %s scale [1.0, 1.0, 1.0, 1.0] : tensor<?x128xf32>, tensor<?x16x2x64xf8E4M3FN>, tensor<?xi32>
  return
}

// -----

func.func @kv_write_no_scales(%k: tensor<?x128xf32>, %c: tensor<?x16x2x64xf8E4M3FN>, %s: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.kv_write' op scale holds one scale or one per KV head (2), got 0}}
  %r = llmserve.kv_write %k into %c at %s scale [] : tensor<?x128xf32>, tensor<?x16x2x64xf8E4M3FN>, tensor<?xi32>
  return
}

// -----

func.func @kv_write_per_head_dynamic_heads(%k: tensor<?x?xf32>, %c: tensor<?x16x?x64xf8E4M3FN>, %s: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.kv_write' op scale holds one scale per KV head, and the cache's number of KV heads is dynamic}}
  %r = llmserve.kv_write %k into %c at %s scale [1.0, 2.0] : tensor<?x?xf32>, tensor<?x16x?x64xf8E4M3FN>, tensor<?xi32>
  return
}

//===----------------------------------------------------------------------===//
// paged_attention
//===----------------------------------------------------------------------===//

// -----

func.func @attention_fp8_without_scales(%q: tensor<?x512xf32>, %kc: tensor<?x16x2x64xf8E4M3FN>, %bt: tensor<?x?xi32>, %cl: tensor<?xi32>, %qs: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.paged_attention' op an f8E4M3FN cache needs its key_scale}}
  %o, %lse = llmserve.paged_attention %q, %kc, %kc block_table %bt context_len %cl query_start %qs num_heads 8 scale 0.125
      : tensor<?x512xf32>, tensor<?x16x2x64xf8E4M3FN>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @attention_fp8_without_value_scale(%q: tensor<?x512xf32>, %kc: tensor<?x16x2x64xf8E4M3FN>, %bt: tensor<?x?xi32>, %cl: tensor<?xi32>, %qs: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.paged_attention' op an f8E4M3FN cache needs its value_scale}}
  %o, %lse = "llmserve.paged_attention"(%q, %kc, %kc, %bt, %cl, %qs) <{num_heads = 8 : i64, scale = 0.125 : f32, key_scale = array<f32: 1.0>}>
      : (tensor<?x512xf32>, tensor<?x16x2x64xf8E4M3FN>, tensor<?x16x2x64xf8E4M3FN>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x512xf32>, tensor<?x8xf32>)
  return
}

// -----

func.func @attention_scales_without_fp8(%q: tensor<?x512xf32>, %kc: tensor<?x16x2x64xf32>, %bt: tensor<?x?xi32>, %cl: tensor<?xi32>, %qs: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.paged_attention' op key_scale applies to an f8E4M3FN cache only}}
  %o, %lse = llmserve.paged_attention %q, %kc, %kc block_table %bt context_len %cl query_start %qs num_heads 8 scale 0.125 kv_scales [1.0], [1.0]
      : tensor<?x512xf32>, tensor<?x16x2x64xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @attention_infinite_scale(%q: tensor<?x512xf32>, %kc: tensor<?x16x2x64xf8E4M3FN>, %bt: tensor<?x?xi32>, %cl: tensor<?xi32>, %qs: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.paged_attention' op value_scale entries must be positive and finite}}
  %o, %lse = llmserve.paged_attention %q, %kc, %kc block_table %bt context_len %cl query_start %qs num_heads 8 scale 0.125 kv_scales [1.0], [1.0, 0x7F800000]
      : tensor<?x512xf32>, tensor<?x16x2x64xf8E4M3FN>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @attention_num_heads(%q: tensor<?x512xf32>, %kc: tensor<?x16x2x64xf32>, %bt: tensor<?x?xi32>, %cl: tensor<?xi32>, %qs: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.paged_attention' op num_heads must be positive, got 0}}
  %o, %lse = llmserve.paged_attention %q, %kc, %kc block_table %bt context_len %cl query_start %qs num_heads 0 scale 0.125
      : tensor<?x512xf32>, tensor<?x16x2x64xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @attention_scale(%q: tensor<?x512xf32>, %kc: tensor<?x16x2x64xf32>, %bt: tensor<?x?xi32>, %cl: tensor<?xi32>, %qs: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.paged_attention' op scale must be positive, got -0.125}}
  %o, %lse = llmserve.paged_attention %q, %kc, %kc block_table %bt context_len %cl query_start %qs num_heads 8 scale -0.125
      : tensor<?x512xf32>, tensor<?x16x2x64xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @attention_softcap(%q: tensor<?x512xf32>, %kc: tensor<?x16x2x64xf32>, %bt: tensor<?x?xi32>, %cl: tensor<?xi32>, %qs: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.paged_attention' op softcap must be positive and finite, got -1}}
  %o, %lse = llmserve.paged_attention %q, %kc, %kc block_table %bt context_len %cl query_start %qs num_heads 8 scale 0.125 softcap -1.0
      : tensor<?x512xf32>, tensor<?x16x2x64xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @softcap_cap(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'llmserve.softcap' op cap must be positive and finite, got +Inf}}
  %y = llmserve.softcap %x cap 0x7F800000 : tensor<?x8xf32>
  return
}

// -----

func.func @attention_sliding_window(%q: tensor<?x512xf32>, %kc: tensor<?x16x2x64xf32>, %bt: tensor<?x?xi32>, %cl: tensor<?xi32>, %qs: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.paged_attention' op sliding_window must be positive, got 0}}
  %o, %lse = llmserve.paged_attention %q, %kc, %kc block_table %bt context_len %cl query_start %qs num_heads 8 scale 0.125 sliding_window 0
      : tensor<?x512xf32>, tensor<?x16x2x64xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @attention_element_type(%q: tensor<?x512xf32>, %kc: tensor<?x16x2x64xbf16>, %bt: tensor<?x?xi32>, %cl: tensor<?xi32>, %qs: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.paged_attention' op query element type 'f32' must equal cache element type 'bf16'}}
  %o, %lse = llmserve.paged_attention %q, %kc, %kc block_table %bt context_len %cl query_start %qs num_heads 8 scale 0.125
      : tensor<?x512xf32>, tensor<?x16x2x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @attention_gqa(%q: tensor<?x384xf32>, %kc: tensor<?x16x4x64xf32>, %bt: tensor<?x?xi32>, %cl: tensor<?xi32>, %qs: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.paged_attention' op num_heads (6) must be a multiple of the cache's kv_heads (4)}}
  %o, %lse = llmserve.paged_attention %q, %kc, %kc block_table %bt context_len %cl query_start %qs num_heads 6 scale 0.125
      : tensor<?x384xf32>, tensor<?x16x4x64xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x6xf32>
  return
}

// -----

func.func @attention_query_width(%q: tensor<?x500xf32>, %kc: tensor<?x16x2x64xf32>, %bt: tensor<?x?xi32>, %cl: tensor<?xi32>, %qs: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.paged_attention' op query dim 1 (500) must equal num_heads x cache head_dim (8 x 64)}}
  %o, %lse = llmserve.paged_attention %q, %kc, %kc block_table %bt context_len %cl query_start %qs num_heads 8 scale 0.125
      : tensor<?x500xf32>, tensor<?x16x2x64xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @attention_block_table(%q: tensor<?x512xf32>, %kc: tensor<?x16x2x64xf32>, %bt: tensor<3x?xi32>, %cl: tensor<2xi32>, %qs: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.paged_attention' op block_table dim 0 (3) must equal context_len dim 0 (2)}}
  %o, %lse = llmserve.paged_attention %q, %kc, %kc block_table %bt context_len %cl query_start %qs num_heads 8 scale 0.125
      : tensor<?x512xf32>, tensor<?x16x2x64xf32>, tensor<3x?xi32>, tensor<2xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @attention_query_start_vs_context_len(%q: tensor<?x512xf32>, %kc: tensor<?x16x2x64xf32>, %bt: tensor<?x?xi32>, %cl: tensor<2xi32>, %qs: tensor<2xi32>) {
  // expected-error @+1 {{'llmserve.paged_attention' op query_start dim 0 (2) must equal context_len dim 0 (2) + 1}}
  %o, %lse = llmserve.paged_attention %q, %kc, %kc block_table %bt context_len %cl query_start %qs num_heads 8 scale 0.125
      : tensor<?x512xf32>, tensor<?x16x2x64xf32>, tensor<?x?xi32>, tensor<2xi32>, tensor<2xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @attention_query_start_vs_block_table(%q: tensor<?x512xf32>, %kc: tensor<?x16x2x64xf32>, %bt: tensor<4x?xi32>, %cl: tensor<?xi32>, %qs: tensor<4xi32>) {
  // expected-error @+1 {{'llmserve.paged_attention' op query_start dim 0 (4) must equal block_table dim 0 (4) + 1}}
  %o, %lse = llmserve.paged_attention %q, %kc, %kc block_table %bt context_len %cl query_start %qs num_heads 8 scale 0.125
      : tensor<?x512xf32>, tensor<?x16x2x64xf32>, tensor<4x?xi32>, tensor<?xi32>, tensor<4xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @attention_lse_tokens(%q: tensor<5x512xf32>, %kc: tensor<?x16x2x64xf32>, %bt: tensor<?x?xi32>, %cl: tensor<?xi32>, %qs: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.paged_attention' op lse dim 0 (4) must equal query dim 0 (5)}}
  %o, %lse = llmserve.paged_attention %q, %kc, %kc block_table %bt context_len %cl query_start %qs num_heads 8 scale 0.125
      : tensor<5x512xf32>, tensor<?x16x2x64xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<4x8xf32>
  return
}

// -----

func.func @attention_lse_heads(%q: tensor<?x512xf32>, %kc: tensor<?x16x2x64xf32>, %bt: tensor<?x?xi32>, %cl: tensor<?xi32>, %qs: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.paged_attention' op lse dim 1 (2) must equal num_heads (8)}}
  %o, %lse = llmserve.paged_attention %q, %kc, %kc block_table %bt context_len %cl query_start %qs num_heads 8 scale 0.125
      : tensor<?x512xf32>, tensor<?x16x2x64xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x2xf32>
  return
}

// -----

func.func @attention_lse_type(%q: tensor<?x512xf16>, %kc: tensor<?x16x2x64xf16>, %bt: tensor<?x?xi32>, %cl: tensor<?xi32>, %qs: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.paged_attention' op result #1 must be 2D tensor of 32-bit float values, but got 'tensor<?x8xf16>'}}
  %o, %lse = llmserve.paged_attention %q, %kc, %kc block_table %bt context_len %cl query_start %qs num_heads 8 scale 0.125
      : tensor<?x512xf16>, tensor<?x16x2x64xf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf16>
  return
}

// -----

func.func @attention_value_cache_type(%q: tensor<?x512xf32>, %kc: tensor<?x16x2x64xf32>, %vc: tensor<8x16x2x64xf32>, %bt: tensor<?x?xi32>, %cl: tensor<?xi32>, %qs: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.paged_attention' op failed to verify that all of {key_cache, value_cache} have same type}}
  %o, %lse = "llmserve.paged_attention"(%q, %kc, %vc, %bt, %cl, %qs) <{num_heads = 8 : i64, scale = 0.125 : f32}>
      : (tensor<?x512xf32>, tensor<?x16x2x64xf32>, tensor<8x16x2x64xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x512xf32>, tensor<?x8xf32>)
  return
}

// -----

func.func @attention_no_kv_heads(%q: tensor<?x512xf32>, %kc: tensor<?x16x0x64xf32>, %bt: tensor<?x?xi32>, %cl: tensor<?xi32>, %qs: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.paged_attention' op num_heads (8) must be a multiple of the cache's kv_heads (0)}}
  %o, %lse = llmserve.paged_attention %q, %kc, %kc block_table %bt context_len %cl query_start %qs num_heads 8 scale 0.125
      : tensor<?x512xf32>, tensor<?x16x0x64xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @attention_huge_num_heads(%q: tensor<?x512xf32>, %kc: tensor<?x16x1x64xf32>, %bt: tensor<?x?xi32>, %cl: tensor<?xi32>, %qs: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.paged_attention' op query dim 1 (512) must equal num_heads x cache head_dim (4611686018427387904 x 64)}}
  %o, %lse = llmserve.paged_attention %q, %kc, %kc block_table %bt context_len %cl query_start %qs num_heads 4611686018427387904 scale 0.125
      : tensor<?x512xf32>, tensor<?x16x1x64xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x?xf32>
  return
}

//===----------------------------------------------------------------------===//
// silu_mul, gelu
//===----------------------------------------------------------------------===//

// -----

func.func @silu_mul_types(%g: tensor<?x8xf32>, %u: tensor<4x8xf32>) {
  // expected-error @+1 {{'llmserve.silu_mul' op failed to verify that all of {gate, up, result} have same type}}
  %h = "llmserve.silu_mul"(%g, %u) : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @gelu_not_float(%x: tensor<?x8xi8>) {
  // expected-error @+1 {{'llmserve.gelu' op operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<?x8xi8>'}}
  %h = llmserve.gelu %x : tensor<?x8xi8>
  return
}

// -----

func.func @gelu_unknown_approximation(%x: tensor<?x8xf32>) {
  // expected-error @+2 {{expected one of [none, tanh] for how GELU evaluates the normal CDF, got: sigmoid}}
  // expected-error @+1 {{failed to parse Llmserve_GeluApproximationAttr parameter 'value' which is to be a `::mlir::llmserve::GeluApproximation`}}
  %h = llmserve.gelu %x approximation sigmoid : tensor<?x8xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// moe_router, expert_linear, moe_combine
//===----------------------------------------------------------------------===//

func.func @moe_router_top_k(%l: tensor<?x4xf32>) {
  // expected-error @+1 {{'llmserve.moe_router' op top_k (5) must not exceed the 4 experts of logits dim 1}}
  %w, %e = llmserve.moe_router %l top_k 5 scoring softmax : tensor<?x4xf32> -> tensor<?x5xf32>, tensor<?x5xi32>
  return
}

// -----

func.func @moe_router_top_k_zero(%l: tensor<?x4xf32>) {
  // expected-error @+1 {{'llmserve.moe_router' op attribute 'top_k' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %w, %e = llmserve.moe_router %l top_k 0 scoring softmax : tensor<?x4xf32> -> tensor<?x0xf32>, tensor<?x0xi32>
  return
}

// -----

func.func @moe_router_slots(%l: tensor<?x4xf32>) {
  // expected-error @+1 {{'llmserve.moe_router' op experts dim 1 (3) must equal top_k (2)}}
  %w, %e = llmserve.moe_router %l top_k 2 scoring softmax : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x3xi32>
  return
}

// -----

func.func @moe_router_rows(%l: tensor<5x4xf32>) {
  // expected-error @+1 {{'llmserve.moe_router' op weights dim 0 (4) must equal logits dim 0 (5)}}
  %w, %e = llmserve.moe_router %l top_k 2 scoring softmax : tensor<5x4xf32> -> tensor<4x2xf32>, tensor<5x2xi32>
  return
}

// -----

func.func @moe_router_scoring(%l: tensor<?x4xf32>) {
  // expected-error @+2 {{expected one of [softmax, sigmoid] for how a mixture-of-experts router turns logits into expert scores, got: relu}}
  // expected-error @+1 {{failed to parse Llmserve_MoeScoringAttr parameter 'value'}}
  %w, %e = llmserve.moe_router %l top_k 2 scoring relu : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return
}

// -----

func.func @expert_linear_depth(%x: tensor<?x32xf32>, %w: tensor<4x16x64xf32>, %e: tensor<?x2xi32>) {
  // expected-error @+1 {{'llmserve.expert_linear' op input dim 1 (32) must equal weight dim 2 (64)}}
  %y = llmserve.expert_linear %x, %w experts %e : tensor<?x32xf32>, tensor<4x16x64xf32>, tensor<?x2xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @expert_linear_width(%x: tensor<?x64xf32>, %w: tensor<4x16x64xf32>, %e: tensor<?x2xi32>) {
  // expected-error @+1 {{'llmserve.expert_linear' op result dim 1 (8) must equal weight dim 1 (16)}}
  %y = llmserve.expert_linear %x, %w experts %e : tensor<?x64xf32>, tensor<4x16x64xf32>, tensor<?x2xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @expert_linear_result_rows(%x: tensor<3x64xf32>, %w: tensor<4x16x64xf32>, %e: tensor<3x2xi32>) {
  // expected-error @+1 {{'llmserve.expert_linear' op result dim 0 (3) must equal experts dim 0 times dim 1 (3 x 2)}}
  %y = llmserve.expert_linear %x, %w experts %e : tensor<3x64xf32>, tensor<4x16x64xf32>, tensor<3x2xi32> -> tensor<3x16xf32>
  return
}

// -----

func.func @expert_linear_input_rows(%x: tensor<6x64xf32>, %w: tensor<4x16x64xf32>, %e: tensor<3x2xi32>) {
  // expected-error @+1 {{'llmserve.expert_linear' op input dim 0 (6) must equal experts dim 0 (3)}}
  %y = llmserve.expert_linear %x, %w experts %e : tensor<6x64xf32>, tensor<4x16x64xf32>, tensor<3x2xi32> -> tensor<6x16xf32>
  return
}

// -----

func.func @expert_linear_per_slot_rows(%x: tensor<3x64xf32>, %w: tensor<4x16x64xf32>, %e: tensor<3x2xi32>) {
  // expected-error @+1 {{'llmserve.expert_linear' op input (per_slot) dim 0 (3) must equal experts dim 0 times dim 1 (3 x 2)}}
  %y = llmserve.expert_linear %x, %w experts %e per_slot : tensor<3x64xf32>, tensor<4x16x64xf32>, tensor<3x2xi32> -> tensor<6x16xf32>
  return
}

// -----

func.func @expert_linear_dynamic_slots(%x: tensor<?x64xf32>, %w: tensor<4x16x64xf32>, %e: tensor<?x?xi32>) {
  // expected-error @+1 {{'llmserve.expert_linear' op experts must have a static dim 1 (the slots of a token), got 'tensor<?x?xi32>'}}
  %y = llmserve.expert_linear %x, %w experts %e : tensor<?x64xf32>, tensor<4x16x64xf32>, tensor<?x?xi32> -> tensor<?x16xf32>
  return
}

// -----

// An f32 input may read narrow experts, not the other way round.
func.func @expert_linear_types(%x: tensor<?x64xbf16>, %w: tensor<4x16x64xf32>, %e: tensor<?x2xi32>) {
  // expected-error @+1 {{'llmserve.expert_linear' op weight element type 'f32' must equal input element type 'bf16'}}
  %y = llmserve.expert_linear %x, %w experts %e : tensor<?x64xbf16>, tensor<4x16x64xf32>, tensor<?x2xi32> -> tensor<?x16xbf16>
  return
}

// -----

func.func @expert_linear_int8_without_scales(%x: tensor<?x64xf32>, %w: tensor<4x16x64xi8>, %e: tensor<?x2xi32>) {
  // expected-error @+1 {{'llmserve.expert_linear' op an i8 weight needs scales}}
  %y = llmserve.expert_linear %x, %w experts %e : tensor<?x64xf32>, tensor<4x16x64xi8>, tensor<?x2xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @expert_linear_float_with_scales(%x: tensor<?x64xf32>, %w: tensor<4x16x64xf32>, %s: tensor<4x16xf32>, %e: tensor<?x2xi32>) {
  // expected-error @+1 {{'llmserve.expert_linear' op scales go with an i8 weight only}}
  %y = llmserve.expert_linear %x, %w scales %s experts %e : tensor<?x64xf32>, tensor<4x16x64xf32>, tensor<?x2xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @moe_combine_rows(%x: tensor<5x16xf32>, %w: tensor<3x2xf32>) {
  // expected-error @+1 {{'llmserve.moe_combine' op input dim 0 (5) must equal weights dim 0 times dim 1 (3 x 2)}}
  %y = llmserve.moe_combine %x, %w : tensor<5x16xf32>, tensor<3x2xf32> -> tensor<3x16xf32>
  return
}

// -----

func.func @moe_combine_result(%x: tensor<6x16xf32>, %w: tensor<3x2xf32>) {
  // expected-error @+1 {{'llmserve.moe_combine' op result dim 0 (2) must equal weights dim 0 (3)}}
  %y = llmserve.moe_combine %x, %w : tensor<6x16xf32>, tensor<3x2xf32> -> tensor<2x16xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// gather_rows
//===----------------------------------------------------------------------===//

// -----

func.func @gather_rows_element_type(%h: tensor<?x8xf32>, %rows: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.gather_rows' op result element type 'f16' must equal input element type 'f32'}}
  %r = llmserve.gather_rows %h, %rows : tensor<?x8xf32>, tensor<?xi32> -> tensor<?x8xf16>
  return
}

// -----

func.func @gather_rows_count(%h: tensor<?x8xf32>, %rows: tensor<2xi32>) {
  // expected-error @+1 {{'llmserve.gather_rows' op result dim 0 (3) must equal rows dim 0 (2)}}
  %r = llmserve.gather_rows %h, %rows : tensor<?x8xf32>, tensor<2xi32> -> tensor<3x8xf32>
  return
}

// -----

func.func @gather_rows_width(%h: tensor<?x8xf32>, %rows: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.gather_rows' op result dim 1 (4) must equal input dim 1 (8)}}
  %r = llmserve.gather_rows %h, %rows : tensor<?x8xf32>, tensor<?xi32> -> tensor<?x4xf32>
  return
}

//===----------------------------------------------------------------------===//
// sample
//===----------------------------------------------------------------------===//

// -----

func.func @sample_temperature(%l: tensor<2x100xf32>, %t: tensor<3xf32>, %p: tensor<?xf32>, %k: tensor<?xi32>, %m: tensor<?xf32>, %s: tensor<?xi64>, %o: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.sample' op temperature dim 0 (3) must equal logits dim 0 (2)}}
  %tok = llmserve.sample %l temperature %t top_p %p top_k %k min_p %m seed %s rng_offset %o
      : tensor<2x100xf32>, tensor<3xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xf32>, tensor<?xi64>, tensor<?xi32> -> tensor<?xi32>
  return
}

// -----

func.func @sample_top_p(%l: tensor<2x100xf32>, %t: tensor<?xf32>, %p: tensor<3xf32>, %k: tensor<?xi32>, %m: tensor<?xf32>, %s: tensor<?xi64>, %o: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.sample' op top_p dim 0 (3) must equal logits dim 0 (2)}}
  %tok = llmserve.sample %l temperature %t top_p %p top_k %k min_p %m seed %s rng_offset %o
      : tensor<2x100xf32>, tensor<?xf32>, tensor<3xf32>, tensor<?xi32>, tensor<?xf32>, tensor<?xi64>, tensor<?xi32> -> tensor<?xi32>
  return
}

// -----

func.func @sample_top_k(%l: tensor<2x100xf32>, %t: tensor<?xf32>, %p: tensor<?xf32>, %k: tensor<3xi32>, %m: tensor<?xf32>, %s: tensor<?xi64>, %o: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.sample' op top_k dim 0 (3) must equal logits dim 0 (2)}}
  %tok = llmserve.sample %l temperature %t top_p %p top_k %k min_p %m seed %s rng_offset %o
      : tensor<2x100xf32>, tensor<?xf32>, tensor<?xf32>, tensor<3xi32>, tensor<?xf32>, tensor<?xi64>, tensor<?xi32> -> tensor<?xi32>
  return
}

// -----

func.func @sample_min_p(%l: tensor<2x100xf32>, %t: tensor<?xf32>, %p: tensor<?xf32>, %k: tensor<?xi32>, %m: tensor<3xf32>, %s: tensor<?xi64>, %o: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.sample' op min_p dim 0 (3) must equal logits dim 0 (2)}}
  %tok = llmserve.sample %l temperature %t top_p %p top_k %k min_p %m seed %s rng_offset %o
      : tensor<2x100xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<3xf32>, tensor<?xi64>, tensor<?xi32> -> tensor<?xi32>
  return
}

// -----

func.func @sample_seed(%l: tensor<2x100xf32>, %t: tensor<?xf32>, %p: tensor<?xf32>, %k: tensor<?xi32>, %m: tensor<?xf32>, %s: tensor<3xi64>, %o: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.sample' op seed dim 0 (3) must equal logits dim 0 (2)}}
  %tok = llmserve.sample %l temperature %t top_p %p top_k %k min_p %m seed %s rng_offset %o
      : tensor<2x100xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xf32>, tensor<3xi64>, tensor<?xi32> -> tensor<?xi32>
  return
}

// -----

func.func @sample_rng_offset(%l: tensor<2x100xf32>, %t: tensor<?xf32>, %p: tensor<?xf32>, %k: tensor<?xi32>, %m: tensor<?xf32>, %s: tensor<?xi64>, %o: tensor<3xi32>) {
  // expected-error @+1 {{'llmserve.sample' op rng_offset dim 0 (3) must equal logits dim 0 (2)}}
  %tok = llmserve.sample %l temperature %t top_p %p top_k %k min_p %m seed %s rng_offset %o
      : tensor<2x100xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xf32>, tensor<?xi64>, tensor<3xi32> -> tensor<?xi32>
  return
}

// -----

func.func @sample_result(%l: tensor<2x100xf32>, %t: tensor<?xf32>, %p: tensor<?xf32>, %k: tensor<?xi32>, %m: tensor<?xf32>, %s: tensor<?xi64>, %o: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.sample' op result dim 0 (3) must equal logits dim 0 (2)}}
  %tok = llmserve.sample %l temperature %t top_p %p top_k %k min_p %m seed %s rng_offset %o
      : tensor<2x100xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xf32>, tensor<?xi64>, tensor<?xi32> -> tensor<3xi32>
  return
}

// -----

func.func @sample_seed_type(%l: tensor<2x100xf32>, %t: tensor<?xf32>, %p: tensor<?xf32>, %k: tensor<?xi32>, %m: tensor<?xf32>, %s: tensor<?xi32>, %o: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.sample' op operand #5 must be 1D tensor of 64-bit signless integer values, but got 'tensor<?xi32>'}}
  %tok = llmserve.sample %l temperature %t top_p %p top_k %k min_p %m seed %s rng_offset %o
      : tensor<2x100xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?xi32>
  return
}

//===----------------------------------------------------------------------===//
// Malformed generic forms are diagnosed, not crashed on
//===----------------------------------------------------------------------===//

// -----

func.func @rms_norm_too_few_operands(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'llmserve.rms_norm' op expected 2 or more operands, but found 1}}
  %y = "llmserve.rms_norm"(%x) <{epsilon = 1.0e-06 : f32}> : (tensor<?x8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @rms_norm_two_residuals(%x: tensor<?x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'llmserve.rms_norm' op operand group starting at #2 requires 0 or 1 element, but found 2}}
  %y:2 = "llmserve.rms_norm"(%x, %w, %x, %x) <{epsilon = 1.0e-06 : f32}>
      : (tensor<?x8xf32>, tensor<8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>)
  return
}

// -----

func.func @rope_missing_attribute(%x: tensor<?x8xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.rope' op requires attribute 'head_dim'}}
  %y = "llmserve.rope"(%x, %p) <{operandSegmentSizes = array<i32: 1, 1, 0, 0>}> : (tensor<?x8xf32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @kv_write_no_result(%k: tensor<?x8xf32>, %c: tensor<?x16x2x4xf32>, %s: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.kv_write' op requires one result}}
  "llmserve.kv_write"(%k, %c, %s) : (tensor<?x8xf32>, tensor<?x16x2x4xf32>, tensor<?xi32>) -> ()
  return
}

//===----------------------------------------------------------------------===//
// adjust_logits
//===----------------------------------------------------------------------===//

// -----

func.func @adjust_logits_result_type(%l: tensor<2x100xf32>, %ps: tensor<?xi32>, %pt: tensor<?xi32>, %pc: tensor<?xi32>, %pb: tensor<?xf32>, %pp: tensor<?xf32>, %fp: tensor<?xf32>, %rp: tensor<?xf32>, %mi: tensor<?xi32>, %mw: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.adjust_logits' op result element type 'f16' must equal logits element type 'f32'}}
  %o = llmserve.adjust_logits %l entries %ps tokens %pt counts %pc bias %pb presence %pp frequency %fp repetition %rp mask_index %mi mask %mw
      : tensor<2x100xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<2x100xf16>
  return
}

// -----

func.func @adjust_logits_result_vocab(%l: tensor<2x100xf32>, %ps: tensor<?xi32>, %pt: tensor<?xi32>, %pc: tensor<?xi32>, %pb: tensor<?xf32>, %pp: tensor<?xf32>, %fp: tensor<?xf32>, %rp: tensor<?xf32>, %mi: tensor<?xi32>, %mw: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.adjust_logits' op result dim 1 (99) must equal logits dim 1 (100)}}
  %o = llmserve.adjust_logits %l entries %ps tokens %pt counts %pc bias %pb presence %pp frequency %fp repetition %rp mask_index %mi mask %mw
      : tensor<2x100xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<2x99xf32>
  return
}

// -----

func.func @adjust_logits_result_rows(%l: tensor<2x100xf32>, %ps: tensor<?xi32>, %pt: tensor<?xi32>, %pc: tensor<?xi32>, %pb: tensor<?xf32>, %pp: tensor<?xf32>, %fp: tensor<?xf32>, %rp: tensor<?xf32>, %mi: tensor<?xi32>, %mw: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.adjust_logits' op result dim 0 (3) must equal logits dim 0 (2)}}
  %o = llmserve.adjust_logits %l entries %ps tokens %pt counts %pc bias %pb presence %pp frequency %fp repetition %rp mask_index %mi mask %mw
      : tensor<2x100xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<3x100xf32>
  return
}

// -----

func.func @adjust_logits_presence(%l: tensor<2x100xf32>, %ps: tensor<?xi32>, %pt: tensor<?xi32>, %pc: tensor<?xi32>, %pb: tensor<?xf32>, %pp: tensor<3xf32>, %fp: tensor<?xf32>, %rp: tensor<?xf32>, %mi: tensor<?xi32>, %mw: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.adjust_logits' op presence_penalty dim 0 (3) must equal logits dim 0 (2)}}
  %o = llmserve.adjust_logits %l entries %ps tokens %pt counts %pc bias %pb presence %pp frequency %fp repetition %rp mask_index %mi mask %mw
      : tensor<2x100xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xf32>, tensor<3xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<2x100xf32>
  return
}

// -----

func.func @adjust_logits_frequency(%l: tensor<2x100xf32>, %ps: tensor<?xi32>, %pt: tensor<?xi32>, %pc: tensor<?xi32>, %pb: tensor<?xf32>, %pp: tensor<?xf32>, %fp: tensor<3xf32>, %rp: tensor<?xf32>, %mi: tensor<?xi32>, %mw: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.adjust_logits' op frequency_penalty dim 0 (3) must equal logits dim 0 (2)}}
  %o = llmserve.adjust_logits %l entries %ps tokens %pt counts %pc bias %pb presence %pp frequency %fp repetition %rp mask_index %mi mask %mw
      : tensor<2x100xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xf32>, tensor<?xf32>, tensor<3xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<2x100xf32>
  return
}

// -----

func.func @adjust_logits_repetition(%l: tensor<2x100xf32>, %ps: tensor<?xi32>, %pt: tensor<?xi32>, %pc: tensor<?xi32>, %pb: tensor<?xf32>, %pp: tensor<?xf32>, %fp: tensor<?xf32>, %rp: tensor<3xf32>, %mi: tensor<?xi32>, %mw: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.adjust_logits' op repetition_penalty dim 0 (3) must equal logits dim 0 (2)}}
  %o = llmserve.adjust_logits %l entries %ps tokens %pt counts %pc bias %pb presence %pp frequency %fp repetition %rp mask_index %mi mask %mw
      : tensor<2x100xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<3xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<2x100xf32>
  return
}

// -----

func.func @adjust_logits_counts(%l: tensor<2x100xf32>, %ps: tensor<?xi32>, %pt: tensor<5xi32>, %pc: tensor<4xi32>, %pb: tensor<?xf32>, %pp: tensor<?xf32>, %fp: tensor<?xf32>, %rp: tensor<?xf32>, %mi: tensor<?xi32>, %mw: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.adjust_logits' op counts dim 0 (4) must equal tokens dim 0 (5)}}
  %o = llmserve.adjust_logits %l entries %ps tokens %pt counts %pc bias %pb presence %pp frequency %fp repetition %rp mask_index %mi mask %mw
      : tensor<2x100xf32>, tensor<?xi32>, tensor<5xi32>, tensor<4xi32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<2x100xf32>
  return
}

// -----

func.func @adjust_logits_bias(%l: tensor<2x100xf32>, %ps: tensor<?xi32>, %pt: tensor<5xi32>, %pc: tensor<?xi32>, %pb: tensor<4xf32>, %pp: tensor<?xf32>, %fp: tensor<?xf32>, %rp: tensor<?xf32>, %mi: tensor<?xi32>, %mw: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.adjust_logits' op bias dim 0 (4) must equal tokens dim 0 (5)}}
  %o = llmserve.adjust_logits %l entries %ps tokens %pt counts %pc bias %pb presence %pp frequency %fp repetition %rp mask_index %mi mask %mw
      : tensor<2x100xf32>, tensor<?xi32>, tensor<5xi32>, tensor<?xi32>, tensor<4xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<2x100xf32>
  return
}

// -----

func.func @adjust_logits_mask_index(%l: tensor<2x100xf32>, %ps: tensor<?xi32>, %pt: tensor<?xi32>, %pc: tensor<?xi32>, %pb: tensor<?xf32>, %pp: tensor<?xf32>, %fp: tensor<?xf32>, %rp: tensor<?xf32>, %mi: tensor<3xi32>, %mw: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.adjust_logits' op mask_index dim 0 (3) must equal logits dim 0 (2)}}
  %o = llmserve.adjust_logits %l entries %ps tokens %pt counts %pc bias %pb presence %pp frequency %fp repetition %rp mask_index %mi mask %mw
      : tensor<2x100xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<3xi32>, tensor<?xi32> -> tensor<2x100xf32>
  return
}

//===----------------------------------------------------------------------===//
// logprobs
//===----------------------------------------------------------------------===//

// -----

func.func @logprobs_tokens(%l: tensor<2x100xf32>, %t: tensor<3xi32>, %n: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.logprobs' op tokens dim 0 (3) must equal logits dim 0 (2)}}
  %a, %b, %c = llmserve.logprobs %l tokens %t num %n
      : tensor<2x100xf32>, tensor<3xi32>, tensor<?xi32> -> tensor<?xf32>, tensor<?x20xi32>, tensor<?x20xf32>
  return
}

// -----

func.func @logprobs_num(%l: tensor<2x100xf32>, %t: tensor<?xi32>, %n: tensor<3xi32>) {
  // expected-error @+1 {{'llmserve.logprobs' op num_logprobs dim 0 (3) must equal logits dim 0 (2)}}
  %a, %b, %c = llmserve.logprobs %l tokens %t num %n
      : tensor<2x100xf32>, tensor<?xi32>, tensor<3xi32> -> tensor<?xf32>, tensor<?x20xi32>, tensor<?x20xf32>
  return
}

// -----

func.func @logprobs_rows(%l: tensor<2x100xf32>, %t: tensor<?xi32>, %n: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.logprobs' op top_logprobs dim 0 (3) must equal logits dim 0 (2)}}
  %a, %b, %c = llmserve.logprobs %l tokens %t num %n
      : tensor<2x100xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?xf32>, tensor<?x20xi32>, tensor<3x20xf32>
  return
}

// -----

func.func @logprobs_top_mismatch(%l: tensor<2x100xf32>, %t: tensor<?xi32>, %n: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.logprobs' op top_logprobs dim 1 (5) must equal top_tokens dim 1 (20)}}
  %a, %b, %c = llmserve.logprobs %l tokens %t num %n
      : tensor<2x100xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?xf32>, tensor<?x20xi32>, tensor<?x5xf32>
  return
}

// -----

func.func @logprobs_dynamic_top(%l: tensor<2x100xf32>, %t: tensor<?xi32>, %n: tensor<?xi32>) {
  // expected-error @+1 {{'llmserve.logprobs' op the number of top log-probs (dimension 1 of top_tokens and top_logprobs) must be static}}
  %a, %b, %c = llmserve.logprobs %l tokens %t num %n
      : tensor<2x100xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?xf32>, tensor<?x?xi32>, tensor<?x?xf32>
  return
}

//===----------------------------------------------------------------------===//
// dispatch_region, yield
//===----------------------------------------------------------------------===//

// -----

func.func @dispatch_region_no_result(%x: tensor<4xf32>) {
  // expected-error @+1 {{'llmserve.dispatch_region' op yields no value}}
  llmserve.dispatch_region(%x) : (tensor<4xf32>) -> () {
  ^bb0(%in: tensor<4xf32>):
    "llmserve.yield"() : () -> ()
  }
  return
}

// -----

func.func @dispatch_region_arguments(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'llmserve.dispatch_region' op has entry block arguments of types ('tensor<8xf32>') for inputs of types ('tensor<4xf32>')}}
  %r = llmserve.dispatch_region(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%in: tensor<8xf32>):
    llmserve.yield %in : tensor<8xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @dispatch_region_yield(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'llmserve.dispatch_region' op yields values of types ('tensor<4xf16>') for results of types ('tensor<4xf32>')}}
  %r = llmserve.dispatch_region(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%in: tensor<4xf32>):
    %h = arith.truncf %in : tensor<4xf32> to tensor<4xf16>
    llmserve.yield %h : tensor<4xf16>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @dispatch_region_captures(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-note @+1 {{required by region isolation constraints}}
  %r = llmserve.dispatch_region() : () -> tensor<4xf32> {
    // expected-error @+1 {{'llmserve.yield' op using value defined outside the region}}
    llmserve.yield %x : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @yield_outside_region(%x: tensor<4xf32>) {
  // expected-error @+1 {{'llmserve.yield' op expects parent op 'llmserve.dispatch_region'}}
  "llmserve.yield"(%x) : (tensor<4xf32>) -> ()
  return
}
