//===- Passes.td - llmserve kernel transforms --------------*- tablegen -*-===//

#ifndef LLMSERVE_TRANSFORMS_PASSES
#define LLMSERVE_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def ApproximateMath : Pass<"llmserve-approximate-math"> {
  let summary = "Replace math.exp, log, tanh and erf by inline polynomials";
  let description = [{
    The kernels' exponentials and logarithms (softmax, SiLU, GELU, sampling)
    otherwise become calls into libm, one element at a time. Upstream's f32
    polynomial approximations are a few ulp from libm, inline, and
    vectorizable by LLVM.
  }];
  let options = [
    Option<"trigonometry", "trigonometry", "bool", /*default=*/"false",
           "Also replace math.sin and math.cos (accurate on [-pi/4, pi/4]: "
           "the caller reduces the argument)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def MathToLlvmIntrinsics : Pass<"llmserve-math-to-llvm-intrinsics"> {
  let summary = "Call LLVM intrinsics for math.floor, roundeven, fma, absf, sqrt and rsqrt";
  let description = [{
    convert-gpu-to-nvvm turns the math ops left after
    llmserve-approximate-math into calls to CUDA's libdevice (`__nv_floorf`,
    `__nv_fmaf`, ...), which the bundle would then have to link. On f32 each
    of them is one PTX instruction; this pass calls the generic LLVM
    intrinsics instead (`llvm.call_intrinsic`, which the conversion leaves
    alone), and rsqrt becomes 1 / sqrt (IEEE sqrt and division, as on the
    CPU). Other element types are left alone.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::LLVM::LLVMDialect"
  ];
}

def ApplyCpuSchedule : Pass<"llmserve-apply-cpu-schedule", "ModuleOp"> {
  let summary = "Run the CPU transform schedules on the bufferized kernels";
  let description = [{
    Applies the transform-dialect schedules that llmc embeds from
    `compiler/Pipeline/schedules/cpu-kernels.mlir` to the kernels module
    (after one-shot bufferization). Elementwise linalg.generic kernels are
    tiled by 16 elements and vectorized, the last tile masked. The linear
    contraction on packed weights is tiled into 8-row by 3-panel register
    tiles (peeled, so every tile is static), vectorized, lowered to outer
    products and FMAs, and its accumulators are hoisted out of the k loop;
    a dispatch region's contractions are scheduled together, after its
    elementwise epilogue is vectorized by panel row. The norms' row
    reductions and row-wise generics run a row at a time in 16-wide vectors
    with a static remainder, the running sum in a register. A failure of a
    schedule is a failure of the pass.
  }];
  let dependentDialects = [
    "::mlir::affine::AffineDialect", "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::transform::TransformDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def FormDispatchRegions : Pass<"llmserve-form-dispatch-regions", "ModuleOp"> {
  let summary = "Fuse linears with the elementwise generic that consumes them";
  let description = [{
    For each f32 2-D elementwise `linalg.generic` with identity maps that
    does not read its init (`llmserve-to-linalg`'s `silu_mul` and `gelu`),
    the `llmserve.linear` ops whose only user it is, which read one input
    and weights of one shape that the CPU target keeps in 16-column panels
    (checkpoint weights with N a multiple of 16), join it in one
    `llmserve.dispatch_region`: the shared input, the weights and biases and
    the generic's other operands are the region's inputs, the generic's
    result its result. `llmserve-to-cpu-kernels` compiles the region to one
    kernel whose workgroups apply the generic's body to their block of the
    linears' outputs in cache; the linears' outputs are never stored.
  }];
}

def GroupSiblingLinears : Pass<"llmserve-group-sibling-linears", "ModuleOp"> {
  let summary = "Run the linears that read one input as one dispatch";
  let description = [{
    The `llmserve.linear` ops of a function body that read one input (and
    the same FP8 input scales), whose input is not f32 and whose weights
    have one element type, join one `llmserve.dispatch_region` at the
    first of them: a layer's q, k and v projections, and a gated MLP's gate
    and up projections. The shared input is the region's first input, then
    each linear's other operands in order (weight ops defined after the
    first linear move before it); the region yields the linears' results in
    order. `llmserve-to-gpu-kernels` compiles it to one kernel per step size
    whose blocks each compute one column tile of one of the linears, so a
    decode step launches 3 kernels fewer per layer. A linear whose other
    operands are computed after the first one stays alone.
  }];
}

def GroupSiblingRopes : Pass<"llmserve-group-sibling-ropes", "ModuleOp"> {
  let summary = "Run the ropes of one position array as one dispatch";
  let description = [{
    The `llmserve.rope` ops of a function body that read one position array
    and have the same attributes (a layer's q and k) join one
    `llmserve.dispatch_region` at the first of them, when the later ones'
    inputs are computed before it (after `llmserve-group-sibling-linears`,
    q, k and v come from one region). The positions are the region's first
    input, then each rope's input; it yields their results in order.
    `llmserve-to-gpu-kernels` compiles it to one kernel whose blocks rotate
    one token of each input, so a decode step launches one kernel fewer per
    layer. LongRoPE ropes, which also read the sequences' context lengths,
    stay alone.
  }];
}

def GroupKvWrites : Pass<"llmserve-group-kv-writes", "ModuleOp"> {
  let summary = "Write a layer's keys and values in the kernel of its rope";
  let description = [{
    The `llmserve.kv_write` ops of a function body that read one slot
    mapping join one `llmserve.dispatch_region` at the first of them, when
    the later ones' operands are computed before it (a layer's key and value
    writes). When a rope, or a region of sibling ropes
    (`llmserve-group-sibling-ropes`), computes one of the written inputs and
    the writes read nothing computed after it, the writes join that region
    instead. A write never moves above an op that reads its cache, which it
    updates in place. The region's inputs are the values its ops read from outside,
    in order of first use; it yields their results that are used outside
    (the rotated queries and the updated caches) in order.
    `llmserve-to-gpu-kernels` compiles it to one kernel whose blocks rotate
    one token's rows and store its keys and values into their cache slots,
    the rotated keys as they are computed, so a decode step launches two
    kernels fewer per layer. A lone write without such a rope stays alone,
    and so do LongRoPE ropes.
  }];
}

def NarrowStorage : Pass<"llmserve-narrow-storage", "ModuleOp"> {
  let summary = "Store weights, KV caches and activations as f16 or bf16";
  let description = [{
    `llmc import` writes an all-f32 graph. On the GPU, weights, KV caches
    and activations are stored as f16 or bf16 (kernels accumulate in f32).
    This pass narrows the element type of every weight, every KV-cache
    argument (`llmserve.kv_cache`) and every float activation of the
    module's functions, and keeps what the step contract fixes: contract
    arrays, `paged_attention`'s `lse` (f32), and the results of the
    functions, so the `linear` producing the logits that `sample` reads or
    that a function returns stays f32 (a narrow linear may have an f32
    result). A float argument that is neither a contract array nor a KV
    cache, or a returned float produced by an op other than `linear`, is
    an error: such a function is compiled with the types it is written with.
  }];
  let options = [
    Option<"dtype", "dtype", "std::string", /*default=*/"\"bf16\"",
           "Storage type: bf16 or f16">
  ];
}

def NarrowLinearWeights : Pass<"llmserve-narrow-linear-weights", "ModuleOp"> {
  let summary = "Store the weights of linears as f16 or bf16, computing in f32";
  let description = [{
    On the CPU, where kernels compute in f32, a linear may read a narrower
    weight, widened as it is read: every unquantized f32 `llmserve.weight`
    whose only uses are as linears' (or expert_linears') weights becomes
    `dtype`, halving the bytes a step streams. Activations, KV caches and
    other weights (norms, an embedding table) keep f32, and so does a tensor
    another weight op reads otherwise (the output layer of tied embeddings),
    since the bundle reads a tensor once.
  }];
  let options = [
    Option<"dtype", "dtype", "std::string", /*default=*/"\"bf16\"",
           "Weight type: bf16 or f16">
  ];
}

def QuantizeWeights : Pass<"llmserve-quantize-weights", "ModuleOp"> {
  let summary = "Read the weights of linears quantized";
  let description = [{
    Linears read their weights quantized: each unquantized `llmserve.weight`
    that a linear reads as its weight gets two weight ops of one quantized
    weight, its values and its scales, which those linears read instead;
    the runtime quantizes the checkpoint tensor when it loads it. Other
    uses of the weight (the embedding table of tied word embeddings, a
    linear's input) keep the float weight. The stacked weights that
    expert_linear reads are quantized by int8_channel whatever the scheme,
    one scale per expert and row (expert_linear has no int4 kernel), unless
    `experts` is false (sm_90 has no int8 expert kernel). A
    weight dequantized from a quantized checkpoint (`from`) keeps its
    origin, and a 4-bit checkpoint's linear under int4_group128 gets its
    zero points too, so that the runtime reads it as stored where it can.
  }];
  let options = [
    Option<"scheme", "scheme", "std::string", /*default=*/"\"int8_channel\"",
           "Quantization scheme: int8_channel (int8 values, one f32 scale "
           "per output channel) or int4_group128 (int4 values, one f32 scale "
           "per output channel and group of 128 inputs; weights of other "
           "widths stay float)">,
    Option<"experts", "experts", "bool", /*default=*/"true",
           "Quantize the stacked weights of expert_linear too (int8_channel)">
  ];
}

def ReadFp8Weights : Pass<"llmserve-read-fp8-weights", "ModuleOp"> {
  let summary = "Linears read an FP8 checkpoint's weights as stored";
  let description = [{
    An FP8 checkpoint's weight (`from fp8_block128`, unquantized: the
    runtime would dequantize it) that only linears read as their weight
    becomes two weight ops of `quantized fp8_block128`, its e4m3 codes
    (`values`, f8E4M3FN) and its scales per block of 128 x 128 (`scales`,
    f32), which those linears read instead: a byte per weight, where the
    dequantized weight takes two or four. A weight read otherwise, or
    transposed, stacked, or whose rows do not start at a block of 128 rows,
    stays dequantized.
  }];
}

def QuantizeFp8Activations : Pass<"llmserve-quantize-fp8-activations",
                                   "ModuleOp"> {
  let summary = "Linears of FP8 weights multiply FP8 inputs (W8A8)";
  let description = [{
    Every linear of an f8E4M3FN weight (an FP8 checkpoint read as stored)
    whose input is f16 or bf16, with K a multiple of 16, reads its input as
    `llmserve.quantize_fp8` codes and scales, so that both operands go to
    the FP8 tensor cores. Linears that read the same input share one
    quantization (q, k and v; gate and up), placed after the input's
    definition. The quantization is per row, so a row's result does not
    depend on the other rows of its step.
  }];
}

def QuantizeKvCache : Pass<"llmserve-quantize-kv-cache", "ModuleOp"> {
  let summary = "Store the KV cache as FP8 e4m3";
  let description = [{
    Every KV-cache argument (`llmserve.kv_cache`) becomes `f8E4M3FN`, a
    quarter of f32's bytes and half of bf16's, so twice to four times the
    tokens fit a given KV budget. `kv_write` stores x / scale rounded to
    e4m3 and `paged_attention` reads codes times the scale, computing in
    f32 as before. The scales of each cache tensor are the `scale` of its
    `llmserve.kv_cache` attribute (an `array<f32>` of one scale, or of one per
    KV head), which `llmc import` takes from a checkpoint that calibrated
    them (compressed-tensors' kv_cache_scheme, strategy `tensor` or
    `attn_head`), or else 1 (what vLLM uses for a checkpoint without KV
    scales): e4m3 then holds magnitudes from 2^-9 to 448, with 3 mantissa
    bits. Only `kv_write` and `paged_attention` may use a cache.
  }];
}

#endif
