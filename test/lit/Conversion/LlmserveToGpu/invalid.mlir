// RUN: %llmserve-opt %s -llmserve-to-gpu-kernels -split-input-file -verify-diagnostics

// int8 experts have CPU kernels only.
func.func @expert_linear_int8(%x: tensor<?x64xf32>, %e: tensor<?x2xi32>) -> tensor<?x32xf32> {
  %v = llmserve.weight "e.{}.w" stacked 4 quantized int8_channel values : tensor<4x32x64xi8>
  %s = llmserve.weight "e.{}.w" stacked 4 quantized int8_channel scales : tensor<4x32xf32>
  // expected-error @below {{'llmserve.expert_linear' op has no sm_90 kernel for int8 experts (llmc compile --quantize leaves them unquantized for sm_90)}}
  %y = llmserve.expert_linear %x, %v scales %s experts %e per_slot : tensor<?x64xf32>, tensor<4x32x64xi8>, tensor<?x2xi32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
