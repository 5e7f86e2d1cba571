// RUN: %llmserve-opt %s -llmserve-to-gpu-kernels -split-input-file -verify-diagnostics

// int8 weights have CPU kernels only.
func.func @linear_int8(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %v = llmserve.weight "w" quantized int8_channel values : tensor<64x64xi8>
  %s = llmserve.weight "w" quantized int8_channel scales : tensor<64xf32>
  // expected-error @below {{'llmserve.linear' op has no sm_90 kernel for int8 weights (llmc compile --quantize int8 targets the CPU)}}
  %y = llmserve.linear %x, %v scales %s : tensor<?x64xf32>, tensor<64x64xi8> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

func.func @expert_linear_int8(%x: tensor<?x64xf32>, %e: tensor<?x2xi32>) -> tensor<?x32xf32> {
  %v = llmserve.weight "e.{}.w" stacked 4 quantized int8_channel values : tensor<4x32x64xi8>
  %s = llmserve.weight "e.{}.w" stacked 4 quantized int8_channel scales : tensor<4x32xf32>
  // expected-error @below {{'llmserve.expert_linear' op has no sm_90 kernel for int8 weights (llmc compile --quantize targets the CPU)}}
  %y = llmserve.expert_linear %x, %v scales %s experts %e per_slot : tensor<?x64xf32>, tensor<4x32x64xi8>, tensor<?x2xi32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
