// RUN: %llmserve-opt %s -llmserve-quantize-weights=scheme=int3 -verify-diagnostics

// expected-error @below {{unknown quantization scheme 'int3' (supported: int8_channel, int4_group128)}}
module {
}
