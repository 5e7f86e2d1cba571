// The linear shapes of llmc-bench-linear: M rows against 2048x2048 and
// 5632x2048 f32 weights (TinyLlama's attention and MLP projections), read
// from a checkpoint as a served model's are (so in the packed panel layout),
// the same weights quantized to int8 at load, and rounded to bf16; and Qwen3-30B-A3B's expert
// projections (128 experts of [768, 2048], the top 8 of each token) next to
// the dense linear that reads as many bytes as a token's 8 experts.

func.func @linear_m1_n2048(%x: tensor<1x2048xf32>) -> tensor<1x2048xf32> {
  %w = llmserve.weight "w2048" : tensor<2048x2048xf32>
  %y = llmserve.linear %x, %w : tensor<1x2048xf32>, tensor<2048x2048xf32> -> tensor<1x2048xf32>
  return %y : tensor<1x2048xf32>
}

func.func @linear_m16_n2048(%x: tensor<16x2048xf32>) -> tensor<16x2048xf32> {
  %w = llmserve.weight "w2048" : tensor<2048x2048xf32>
  %y = llmserve.linear %x, %w : tensor<16x2048xf32>, tensor<2048x2048xf32> -> tensor<16x2048xf32>
  return %y : tensor<16x2048xf32>
}

func.func @linear_m64_n2048(%x: tensor<64x2048xf32>) -> tensor<64x2048xf32> {
  %w = llmserve.weight "w2048" : tensor<2048x2048xf32>
  %y = llmserve.linear %x, %w : tensor<64x2048xf32>, tensor<2048x2048xf32> -> tensor<64x2048xf32>
  return %y : tensor<64x2048xf32>
}

func.func @linear_m512_n2048(%x: tensor<512x2048xf32>) -> tensor<512x2048xf32> {
  %w = llmserve.weight "w2048" : tensor<2048x2048xf32>
  %y = llmserve.linear %x, %w : tensor<512x2048xf32>, tensor<2048x2048xf32> -> tensor<512x2048xf32>
  return %y : tensor<512x2048xf32>
}

func.func @linear_m1_n5632(%x: tensor<1x2048xf32>) -> tensor<1x5632xf32> {
  %w = llmserve.weight "w5632" : tensor<5632x2048xf32>
  %y = llmserve.linear %x, %w : tensor<1x2048xf32>, tensor<5632x2048xf32> -> tensor<1x5632xf32>
  return %y : tensor<1x5632xf32>
}

func.func @linear_m16_n5632(%x: tensor<16x2048xf32>) -> tensor<16x5632xf32> {
  %w = llmserve.weight "w5632" : tensor<5632x2048xf32>
  %y = llmserve.linear %x, %w : tensor<16x2048xf32>, tensor<5632x2048xf32> -> tensor<16x5632xf32>
  return %y : tensor<16x5632xf32>
}

func.func @linear_m64_n5632(%x: tensor<64x2048xf32>) -> tensor<64x5632xf32> {
  %w = llmserve.weight "w5632" : tensor<5632x2048xf32>
  %y = llmserve.linear %x, %w : tensor<64x2048xf32>, tensor<5632x2048xf32> -> tensor<64x5632xf32>
  return %y : tensor<64x5632xf32>
}

func.func @linear_m512_n5632(%x: tensor<512x2048xf32>) -> tensor<512x5632xf32> {
  %w = llmserve.weight "w5632" : tensor<5632x2048xf32>
  %y = llmserve.linear %x, %w : tensor<512x2048xf32>, tensor<5632x2048xf32> -> tensor<512x5632xf32>
  return %y : tensor<512x5632xf32>
}

func.func @linear_int8_m1_n2048(%x: tensor<1x2048xf32>) -> tensor<1x2048xf32> {
  %v = llmserve.weight "w2048" quantized int8_channel values : tensor<2048x2048xi8>
  %s = llmserve.weight "w2048" quantized int8_channel scales : tensor<2048xf32>
  %y = llmserve.linear %x, %v scales %s : tensor<1x2048xf32>, tensor<2048x2048xi8> -> tensor<1x2048xf32>
  return %y : tensor<1x2048xf32>
}

func.func @linear_int8_m1_n5632(%x: tensor<1x2048xf32>) -> tensor<1x5632xf32> {
  %v = llmserve.weight "w5632" quantized int8_channel values : tensor<5632x2048xi8>
  %s = llmserve.weight "w5632" quantized int8_channel scales : tensor<5632xf32>
  %y = llmserve.linear %x, %v scales %s : tensor<1x2048xf32>, tensor<5632x2048xi8> -> tensor<1x5632xf32>
  return %y : tensor<1x5632xf32>
}

func.func @linear_int8_m16_n2048(%x: tensor<16x2048xf32>) -> tensor<16x2048xf32> {
  %v = llmserve.weight "w2048" quantized int8_channel values : tensor<2048x2048xi8>
  %s = llmserve.weight "w2048" quantized int8_channel scales : tensor<2048xf32>
  %y = llmserve.linear %x, %v scales %s : tensor<16x2048xf32>, tensor<2048x2048xi8> -> tensor<16x2048xf32>
  return %y : tensor<16x2048xf32>
}

func.func @linear_int8_m16_n5632(%x: tensor<16x2048xf32>) -> tensor<16x5632xf32> {
  %v = llmserve.weight "w5632" quantized int8_channel values : tensor<5632x2048xi8>
  %s = llmserve.weight "w5632" quantized int8_channel scales : tensor<5632xf32>
  %y = llmserve.linear %x, %v scales %s : tensor<16x2048xf32>, tensor<5632x2048xi8> -> tensor<16x5632xf32>
  return %y : tensor<16x5632xf32>
}

func.func @linear_int8_m64_n2048(%x: tensor<64x2048xf32>) -> tensor<64x2048xf32> {
  %v = llmserve.weight "w2048" quantized int8_channel values : tensor<2048x2048xi8>
  %s = llmserve.weight "w2048" quantized int8_channel scales : tensor<2048xf32>
  %y = llmserve.linear %x, %v scales %s : tensor<64x2048xf32>, tensor<2048x2048xi8> -> tensor<64x2048xf32>
  return %y : tensor<64x2048xf32>
}

func.func @linear_int8_m64_n5632(%x: tensor<64x2048xf32>) -> tensor<64x5632xf32> {
  %v = llmserve.weight "w5632" quantized int8_channel values : tensor<5632x2048xi8>
  %s = llmserve.weight "w5632" quantized int8_channel scales : tensor<5632xf32>
  %y = llmserve.linear %x, %v scales %s : tensor<64x2048xf32>, tensor<5632x2048xi8> -> tensor<64x5632xf32>
  return %y : tensor<64x5632xf32>
}

func.func @linear_int8_m512_n2048(%x: tensor<512x2048xf32>) -> tensor<512x2048xf32> {
  %v = llmserve.weight "w2048" quantized int8_channel values : tensor<2048x2048xi8>
  %s = llmserve.weight "w2048" quantized int8_channel scales : tensor<2048xf32>
  %y = llmserve.linear %x, %v scales %s : tensor<512x2048xf32>, tensor<2048x2048xi8> -> tensor<512x2048xf32>
  return %y : tensor<512x2048xf32>
}

func.func @linear_int8_m512_n5632(%x: tensor<512x2048xf32>) -> tensor<512x5632xf32> {
  %v = llmserve.weight "w5632" quantized int8_channel values : tensor<5632x2048xi8>
  %s = llmserve.weight "w5632" quantized int8_channel scales : tensor<5632xf32>
  %y = llmserve.linear %x, %v scales %s : tensor<512x2048xf32>, tensor<5632x2048xi8> -> tensor<512x5632xf32>
  return %y : tensor<512x5632xf32>
}

func.func @linear_bf16_m1_n2048(%x: tensor<1x2048xf32>) -> tensor<1x2048xf32> {
  %w = llmserve.weight "w2048" : tensor<2048x2048xbf16>
  %y = llmserve.linear %x, %w : tensor<1x2048xf32>, tensor<2048x2048xbf16> -> tensor<1x2048xf32>
  return %y : tensor<1x2048xf32>
}

func.func @linear_bf16_m16_n2048(%x: tensor<16x2048xf32>) -> tensor<16x2048xf32> {
  %w = llmserve.weight "w2048" : tensor<2048x2048xbf16>
  %y = llmserve.linear %x, %w : tensor<16x2048xf32>, tensor<2048x2048xbf16> -> tensor<16x2048xf32>
  return %y : tensor<16x2048xf32>
}

func.func @linear_bf16_m64_n2048(%x: tensor<64x2048xf32>) -> tensor<64x2048xf32> {
  %w = llmserve.weight "w2048" : tensor<2048x2048xbf16>
  %y = llmserve.linear %x, %w : tensor<64x2048xf32>, tensor<2048x2048xbf16> -> tensor<64x2048xf32>
  return %y : tensor<64x2048xf32>
}

func.func @linear_bf16_m512_n2048(%x: tensor<512x2048xf32>) -> tensor<512x2048xf32> {
  %w = llmserve.weight "w2048" : tensor<2048x2048xbf16>
  %y = llmserve.linear %x, %w : tensor<512x2048xf32>, tensor<2048x2048xbf16> -> tensor<512x2048xf32>
  return %y : tensor<512x2048xf32>
}

func.func @linear_bf16_m1_n5632(%x: tensor<1x2048xf32>) -> tensor<1x5632xf32> {
  %w = llmserve.weight "w5632" : tensor<5632x2048xbf16>
  %y = llmserve.linear %x, %w : tensor<1x2048xf32>, tensor<5632x2048xbf16> -> tensor<1x5632xf32>
  return %y : tensor<1x5632xf32>
}

func.func @linear_bf16_m16_n5632(%x: tensor<16x2048xf32>) -> tensor<16x5632xf32> {
  %w = llmserve.weight "w5632" : tensor<5632x2048xbf16>
  %y = llmserve.linear %x, %w : tensor<16x2048xf32>, tensor<5632x2048xbf16> -> tensor<16x5632xf32>
  return %y : tensor<16x5632xf32>
}

func.func @linear_bf16_m64_n5632(%x: tensor<64x2048xf32>) -> tensor<64x5632xf32> {
  %w = llmserve.weight "w5632" : tensor<5632x2048xbf16>
  %y = llmserve.linear %x, %w : tensor<64x2048xf32>, tensor<5632x2048xbf16> -> tensor<64x5632xf32>
  return %y : tensor<64x5632xf32>
}

func.func @linear_bf16_m512_n5632(%x: tensor<512x2048xf32>) -> tensor<512x5632xf32> {
  %w = llmserve.weight "w5632" : tensor<5632x2048xbf16>
  %y = llmserve.linear %x, %w : tensor<512x2048xf32>, tensor<5632x2048xbf16> -> tensor<512x5632xf32>
  return %y : tensor<512x5632xf32>
}

func.func @expert_linear_m1(%x: tensor<1x2048xf32>, %e: tensor<1x8xi32>) -> tensor<8x768xf32> {
  %w = llmserve.weight "experts.{}" stacked 128 : tensor<128x768x2048xf32>
  %y = llmserve.expert_linear %x, %w experts %e : tensor<1x2048xf32>, tensor<128x768x2048xf32>, tensor<1x8xi32> -> tensor<8x768xf32>
  return %y : tensor<8x768xf32>
}

func.func @expert_linear_m16(%x: tensor<16x2048xf32>, %e: tensor<16x8xi32>) -> tensor<128x768xf32> {
  %w = llmserve.weight "experts.{}" stacked 128 : tensor<128x768x2048xf32>
  %y = llmserve.expert_linear %x, %w experts %e : tensor<16x2048xf32>, tensor<128x768x2048xf32>, tensor<16x8xi32> -> tensor<128x768xf32>
  return %y : tensor<128x768xf32>
}

func.func @expert_linear_m64(%x: tensor<64x2048xf32>, %e: tensor<64x8xi32>) -> tensor<512x768xf32> {
  %w = llmserve.weight "experts.{}" stacked 128 : tensor<128x768x2048xf32>
  %y = llmserve.expert_linear %x, %w experts %e : tensor<64x2048xf32>, tensor<128x768x2048xf32>, tensor<64x8xi32> -> tensor<512x768xf32>
  return %y : tensor<512x768xf32>
}

func.func @linear_m1_n6144(%x: tensor<1x2048xf32>) -> tensor<1x6144xf32> {
  %w = llmserve.weight "w6144" : tensor<6144x2048xf32>
  %y = llmserve.linear %x, %w : tensor<1x2048xf32>, tensor<6144x2048xf32> -> tensor<1x6144xf32>
  return %y : tensor<1x6144xf32>
}
