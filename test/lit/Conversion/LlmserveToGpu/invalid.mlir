// RUN: %llmserve-opt %s -llmserve-to-gpu-kernels -split-input-file -verify-diagnostics

// int8 weights have CPU kernels only.
func.func @linear_int8(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %v = llmserve.weight "w" quantized int8_channel values : tensor<64x64xi8>
  %s = llmserve.weight "w" quantized int8_channel scales : tensor<64xf32>
  // expected-error @below {{'llmserve.linear' op has no sm_90 kernel for int8 weights (llmc compile --quantize int8 targets the CPU)}}
  %y = llmserve.linear %x, %v scales %s : tensor<?x64xf32>, tensor<64x64xi8> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
