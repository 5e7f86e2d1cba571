// A gated MLP's gate and up projections and silu_mul compile to one dispatch
// (llmserve-form-dispatch-regions): its bindings are the input, the two
// weights (in panels) and the output; the projections' outputs are no
// buffers at all.
// RUN: %llmc compile %s -o %t.llmb
// RUN: FileCheck %s --input-file %t.llmb/manifest.json

// CHECK: "buffers": [
// CHECK:   "kind": "activation",
// CHECK:   "name": "d0_embedding.0",
// CHECK-NOT: "kind": "activation",
// CHECK:   "kind": "weight",
// CHECK:   "layout": "panels16",
// CHECK:   "name": "gate#panels16",
// CHECK:   "kind": "weight",
// CHECK:   "layout": "panels16",
// CHECK:   "name": "up#panels16",
// CHECK-NOT: "kind": "activation",
// CHECK:   "kind": "result",
// CHECK: "dispatches": [
// CHECK:     "kernel": "d0_embedding",
// CHECK:     "bindings": [
// CHECK-NEXT:  2,
// CHECK-NEXT:  3,
// CHECK-NEXT:  4,
// CHECK-NEXT:  5
// CHECK:     "grid": [
// CHECK-NEXT:  "ceildiv((T),64)",
// CHECK-NEXT:  2,
// CHECK:     "kernel": "d1_dispatch_region",
// CHECK-NOT: "kernel":
func.func @mlp(%ids: tensor<?xi32> {llmserve.contract = "token_ids"}) -> tensor<?x112xf32> {
  %e = llmserve.weight "emb" : tensor<32x64xf32>
  %x = llmserve.embedding %e, %ids : tensor<32x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  %wg = llmserve.weight "gate" : tensor<112x64xf32>
  %wu = llmserve.weight "up" : tensor<112x64xf32>
  %g = llmserve.linear %x, %wg : tensor<?x64xf32>, tensor<112x64xf32> -> tensor<?x112xf32>
  %u = llmserve.linear %x, %wu : tensor<?x64xf32>, tensor<112x64xf32> -> tensor<?x112xf32>
  %h = llmserve.silu_mul %g, %u : tensor<?x112xf32>
  return %h : tensor<?x112xf32>
}
