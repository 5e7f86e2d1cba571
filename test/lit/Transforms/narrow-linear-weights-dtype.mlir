// RUN: %llmserve-opt %s -llmserve-narrow-linear-weights=dtype=f8 -verify-diagnostics

// expected-error @below {{unknown weight type 'f8' (expected bf16 or f16)}}
module {
}
