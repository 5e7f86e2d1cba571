// The dispatch program: buffers with symbolic shapes, one dispatch per op,
// bindings in operand-then-result order, push constants, grid expressions.
// RUN: %llmc compile %s -o %t.llmb
// RUN: FileCheck %s --input-file %t.llmb/manifest.json
// RUN: test -f %t.llmb/kernels.cpu.so

// CHECK: "buffers": [
// CHECK:   "kind": "argument",
// CHECK:   "name": "token_ids",
// CHECK:   "shape": [
// CHECK-NEXT: "T"
// CHECK:   "kind": "kv_cache",
// CHECK:   "name": "layers.0.k",
// CHECK:   "shape": [
// CHECK-NEXT: "NB",
// CHECK-NEXT: 4,
// CHECK:   "kind": "weight",
// CHECK:   "name": "emb",
// CHECK:   "tensor": "emb",
// CHECK:   "transform": "none"
// CHECK:   "kind": "result",
// CHECK:   "name": "result0",
// CHECK: "entry_points": [
// CHECK:   "dispatches": [
// CHECK:     "bindings": [
// CHECK-NEXT:  2,
// CHECK-NEXT:  0,
// CHECK-NEXT:  3
// CHECK:     "grid": [
// CHECK-NEXT:  "ceildiv((T),4)",
// CHECK:     "kernel": "d0_embedding",
// CHECK:     "push_constants": [
// CHECK-NEXT:  "T",
// CHECK-NEXT:  "T"
// CHECK: "format": "llmserve-bundle",
// CHECK: "format_version": 2,
// CHECK: "kernel_abi_version": 3,
func.func @embed(%ids: tensor<?xi32> {llmserve.contract = "token_ids"},
                 %kc: tensor<?x4x2x8xf32> {llmserve.kv_cache = {layer = 0 : i64, role = "k"}})
    -> tensor<?x16xf32> {
  %e = llmserve.weight "emb" : tensor<32x16xf32>
  %x = llmserve.embedding %e, %ids : tensor<32x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
  return %x : tensor<?x16xf32>
}
