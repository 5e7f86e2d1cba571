// The CPU schedule of the elementwise kernels (linalg.generic ops outlined by
// llmserve-to-cpu-kernels and bufferized): a workgroup's slice in tiles of 16
// elements, each tile one vector<16xf32> computation, the last one masked.
// llmc embeds this file; llmserve-apply-cpu-schedule runs it on the kernels
// module.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(
      %kernels: !transform.any_op {transform.readonly}) {
    %generics = transform.structured.match ops{["linalg.generic"]} in %kernels
        : (!transform.any_op) -> !transform.any_op
    %tiles, %loops = transform.structured.tile_using_for %generics
        tile_sizes [16] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.structured.vectorize %tiles vector_sizes [16] : !transform.any_op
    %functions = transform.structured.match ops{["func.func"]} in %kernels
        : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %functions {
      transform.apply_patterns.vector.lower_masked_transfers
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.yield
  }
}
