// The CPU schedules of the kernels llmserve-to-cpu-kernels builds from linalg
// ops, run on the bufferized kernels module by llmserve-apply-cpu-schedule
// (llmc embeds this file).
//
//   elementwise  A rank-1 all-parallel linalg.generic (a workgroup's slice of
//                flattened tensors): tiles of 16 elements, each one
//                vector<16xf32> computation, the last one masked.
//   linear       The contraction y[m, p, l] += x[m, k] * w[p, k, l] over
//                weights packed in panels of 16 columns, and the fill or
//                bias broadcast that initialises y: register tiles of 8 rows
//                by 3 panels (24 vector<16xf32> accumulators), then the rows
//                and panels left over one at a time, for one 256-long chunk
//                of k after another; each tile steps through the chunk one
//                element at a time with outer products (a broadcast
//                element of x times a panel row of w), its accumulators held
//                in registers across the k loop. Every output lane
//                accumulates over k in the same order whatever its tile, so
//                a row's result does not depend on the rows beside it. A
//                kernel may hold several such contractions (a dispatch
//                region's linears): they are scheduled together.
//   epilogue     A rank-3 all-parallel linalg.generic over the [rows]
//                [panels][16] block of a dispatch region's linears: one
//                vector<16xf32> computation per panel row.
//   rows         The norms: rank-2 generics over a workgroup's [rows, D]
//                (all parallel, or a reduction along D into one sum per row)
//                and the fills of their sums: one row at a time, each row in
//                16-wide vectors and a static remainder (D is static), the
//                running sum carried in a register. A row's sums depend on D
//                alone.
module attributes {transform.with_named_sequence} {

  transform.named_sequence @match_elementwise(
      %op: !transform.any_op {transform.readonly}) -> !transform.any_op {
    transform.match.operation_name %op ["linalg.generic"] : !transform.any_op
    transform.match.structured %op : !transform.any_op {
    ^bb0(%generic: !transform.any_op):
      %rank = transform.match.structured.rank %generic
          : (!transform.any_op) -> !transform.param<i64>
      %one = transform.param.constant 1 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %one : !transform.param<i64>
      transform.match.structured.dim %generic[all] {parallel} : !transform.any_op
      transform.match.structured.yield
    }
    transform.yield %op : !transform.any_op
  }

  transform.named_sequence @match_epilogue(
      %op: !transform.any_op {transform.readonly}) -> !transform.any_op {
    transform.match.operation_name %op ["linalg.generic"] : !transform.any_op
    transform.match.structured %op : !transform.any_op {
    ^bb0(%generic: !transform.any_op):
      %rank = transform.match.structured.rank %generic
          : (!transform.any_op) -> !transform.param<i64>
      %three = transform.param.constant 3 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %three : !transform.param<i64>
      transform.match.structured.dim %generic[all] {parallel} : !transform.any_op
      transform.match.structured.yield
    }
    transform.yield %op : !transform.any_op
  }

  transform.named_sequence @match_row_reduction(
      %op: !transform.any_op {transform.readonly}) -> !transform.any_op {
    transform.match.operation_name %op ["linalg.generic"] : !transform.any_op
    transform.match.structured %op : !transform.any_op {
    ^bb0(%generic: !transform.any_op):
      %rank = transform.match.structured.rank %generic
          : (!transform.any_op) -> !transform.param<i64>
      %two = transform.param.constant 2 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %two : !transform.param<i64>
      transform.match.structured.dim %generic[0] {parallel} : !transform.any_op
      transform.match.structured.dim %generic[1] {reduction} : !transform.any_op
      transform.match.structured.yield
    }
    transform.yield %op : !transform.any_op
  }

  transform.named_sequence @match_linear(
      %op: !transform.any_op {transform.readonly}) -> !transform.any_op {
    transform.match.operation_name %op ["linalg.generic"] : !transform.any_op
    transform.match.structured %op : !transform.any_op {
    ^bb0(%generic: !transform.any_op):
      %batch, %m, %n, %k = transform.match.structured.classify_contraction_dims %generic
          : (!transform.any_op) -> (!transform.param<i64>, !transform.param<i64>,
                                    !transform.param<i64>, !transform.param<i64>)
      transform.match.structured.yield
    }
    transform.yield %op : !transform.any_op
  }

  transform.named_sequence @vectorize_elementwise(
      %generic: !transform.any_op {transform.consumed}) {
    %tile, %loop = transform.structured.tile_using_for %generic
        tile_sizes [16] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.structured.vectorize %tile vector_sizes [16] : !transform.any_op
    transform.yield
  }

  // The panel rows of the block (the lane dimension is 16 wide, static).
  transform.named_sequence @vectorize_epilogue(
      %generic: !transform.any_op {transform.consumed}) {
    %tile, %loops:2 = transform.structured.tile_using_for %generic
        tile_sizes [1, 1] : (!transform.any_op)
        -> (!transform.any_op, !transform.any_op, !transform.any_op)
    transform.structured.vectorize %tile : !transform.any_op
    // vector<1x1x16xf32> computations become vector<16xf32> ones.
    %function = transform.get_parent_op %loops#0 {op_name = "func.func"}
        : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %function {
      transform.apply_patterns.vector.cast_away_vector_leading_one_dim
    } : !transform.any_op
    transform.yield
  }

  transform.named_sequence @peel_remainder(
      %loop: !transform.any_op {transform.readonly}) {
    %for = transform.cast %loop : !transform.any_op to !transform.op<"scf.for">
    %full, %rest = transform.loop.peel %for
        : (!transform.op<"scf.for">) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }

  // A norm kernel: its fills, then its rank-2 generics, a row at a time.
  transform.named_sequence @schedule_rows(
      %function: !transform.any_op {transform.consumed}) {
    %fills = transform.structured.match ops{["linalg.fill"]} in %function
        : (!transform.any_op) -> !transform.any_op
    %fill_rows, %fill_loop = transform.structured.tile_using_for %fills
        tile_sizes [1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %generics = transform.structured.match ops{["linalg.generic"]} in %function
        : (!transform.any_op) -> !transform.any_op
    %rows, %row_loops = transform.structured.tile_using_for %generics
        tile_sizes [1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %chunks, %chunk_loops = transform.structured.tile_using_for %rows
        tile_sizes [0, 16] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    // A row of a multiple of 16 has no remainder to peel.
    transform.foreach %chunk_loops : !transform.any_op {
    ^bb0(%chunk_loop: !transform.any_op):
      transform.include @peel_remainder failures(suppress) (%chunk_loop)
          : (!transform.any_op) -> ()
    }
    transform.apply_patterns to %function {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    %static_tiles = transform.structured.match interface{LinalgOp} in %function
        : (!transform.any_op) -> !transform.any_op
    transform.structured.vectorize %static_tiles : !transform.any_op
    transform.apply_patterns to %function {
      transform.apply_patterns.vector.cast_away_vector_leading_one_dim
      transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerreduction"
      transform.apply_patterns.memref.fold_memref_alias_ops
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    // The row's running sum stays in a register across its chunks.
    %loops = transform.structured.match ops{["scf.for"]} in %function
        : (!transform.any_op) -> !transform.any_op
    transform.apply_licm to %loops : !transform.any_op
    transform.apply_cse to %function : !transform.any_op
    %hoisted = transform.structured.hoist_redundant_vector_transfers %function
        : (!transform.any_op) -> !transform.any_op
    transform.yield
  }

  // Every contraction of %function (and the fills or bias broadcasts that
  // initialise them) at once; no other linalg op is left in it.
  transform.named_sequence @schedule_linear(
      %function: !transform.any_op {transform.consumed}) {
    %contraction = transform.collect_matching @match_linear in %function
        : (!transform.any_op) -> !transform.any_op
    // The initialisation of y, one 16-lane panel row at a time.
    %init = transform.structured.match ops{["linalg.fill", "linalg.broadcast"]}
        in %function : (!transform.any_op) -> !transform.any_op
    %init_tile, %init_loops:2 = transform.structured.tile_using_for %init
        tile_sizes [1, 1] : (!transform.any_op)
        -> (!transform.any_op, !transform.any_op, !transform.any_op)
    // k in chunks of 256, outermost: the workgroup's rows all use a chunk of
    // its panels (3 panels x 256 x 64 bytes) while it is in cache. The
    // accumulators go through y between chunks, which keeps every lane's
    // sum in k order.
    %chunk, %chunk_loop = transform.structured.tile_using_for %contraction
        tile_sizes [0, 0, 0, 256] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    // Rows: tiles of 8, then the rest one at a time.
    transform.foreach %chunk : !transform.any_op {
    ^bb0(%one_chunk: !transform.any_op):
      %rows8, %row_loop = transform.structured.tile_using_for %one_chunk
          tile_sizes [8] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
      %row_loop_for = transform.cast %row_loop : !transform.any_op to !transform.op<"scf.for">
      %full_rows, %rest_rows = transform.loop.peel %row_loop_for
          : (!transform.op<"scf.for">) -> (!transform.any_op, !transform.any_op)
      %rest = transform.structured.match ops{["linalg.generic"]} in %rest_rows
          : (!transform.any_op) -> !transform.any_op
      %rows1, %row1_loop = transform.structured.tile_using_for %rest
          tile_sizes [1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    }
    // Panels: threes, then the rest one at a time, in each row tile.
    %row_tiles = transform.structured.match ops{["linalg.generic"]} in %function
        : (!transform.any_op) -> !transform.any_op
    transform.foreach %row_tiles : !transform.any_op {
    ^bb0(%row_tile: !transform.any_op):
      %triples, %triple_loop = transform.structured.tile_using_for %row_tile
          tile_sizes [0, 3] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
      %triple_loop_for = transform.cast %triple_loop : !transform.any_op to !transform.op<"scf.for">
      %full_triples, %rest_panels = transform.loop.peel %triple_loop_for
          : (!transform.op<"scf.for">) -> (!transform.any_op, !transform.any_op)
      %rest_panel = transform.structured.match ops{["linalg.generic"]} in %rest_panels
          : (!transform.any_op) -> !transform.any_op
      %single, %single_loop = transform.structured.tile_using_for %rest_panel
          tile_sizes [0, 1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    }
    // k one step at a time.
    %tiles = transform.structured.match ops{["linalg.generic"]} in %function
        : (!transform.any_op) -> !transform.any_op
    %steps, %k_loops = transform.structured.tile_using_for %tiles
        tile_sizes [0, 0, 0, 1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.apply_patterns to %function {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    // Every tile now has a static shape. The vectorizer's error at the op is
    // the schedule's failure for a tile it cannot vectorize.
    %static_tiles = transform.structured.match interface{LinalgOp} in %function
        : (!transform.any_op) -> !transform.any_op
    transform.structured.vectorize %static_tiles : !transform.any_op
    transform.apply_patterns to %function {
      transform.apply_patterns.vector.reduction_to_contract
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_patterns to %function {
      transform.apply_patterns.memref.fold_memref_alias_ops
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.transfer_to_scf max_transfer_rank = 1 full_unroll = true
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    // The accumulators' loads and stores leave the k loop: the loop carries
    // them in registers.
    %loops = transform.structured.match ops{["scf.for"]} in %function
        : (!transform.any_op) -> !transform.any_op
    transform.apply_licm to %loops : !transform.any_op
    transform.apply_cse to %function : !transform.any_op
    %hoisted = transform.structured.hoist_redundant_vector_transfers %function
        : (!transform.any_op) -> !transform.any_op
    transform.yield
  }

  transform.named_sequence @__transform_main(
      %kernels: !transform.any_op {transform.readonly}) {
    %elementwise = transform.collect_matching @match_elementwise in %kernels
        : (!transform.any_op) -> !transform.any_op
    transform.foreach %elementwise : !transform.any_op {
    ^bb0(%generic: !transform.any_op):
      transform.include @vectorize_elementwise failures(propagate) (%generic)
          : (!transform.any_op) -> ()
    }
    %epilogues = transform.collect_matching @match_epilogue in %kernels
        : (!transform.any_op) -> !transform.any_op
    transform.foreach %epilogues : !transform.any_op {
    ^bb0(%generic: !transform.any_op):
      transform.include @vectorize_epilogue failures(propagate) (%generic)
          : (!transform.any_op) -> ()
    }
    %row_reductions = transform.collect_matching @match_row_reduction in %kernels
        : (!transform.any_op) -> !transform.any_op
    %row_kernels = transform.get_parent_op %row_reductions
        {deduplicate, op_name = "func.func"} : (!transform.any_op) -> !transform.any_op
    transform.foreach %row_kernels : !transform.any_op {
    ^bb0(%function: !transform.any_op):
      transform.include @schedule_rows failures(propagate) (%function)
          : (!transform.any_op) -> ()
    }
    %linears = transform.collect_matching @match_linear in %kernels
        : (!transform.any_op) -> !transform.any_op
    %linear_kernels = transform.get_parent_op %linears
        {deduplicate, op_name = "func.func"} : (!transform.any_op) -> !transform.any_op
    transform.foreach %linear_kernels : !transform.any_op {
    ^bb0(%function: !transform.any_op):
      transform.include @schedule_linear failures(propagate) (%function)
          : (!transform.any_op) -> ()
    }
    %functions = transform.structured.match ops{["func.func"]} in %kernels
        : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %functions {
      transform.apply_patterns.vector.lower_masked_transfers
      transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
      transform.apply_patterns.vector.lower_broadcast
      transform.apply_patterns.vector.lower_outerproduct
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.yield
  }
}
