//===- LlmserveOps.td - llmserve tensor-level ops ----------*- tablegen -*-===//
//
// The ops of a transformer forward step, on tensors. T is the number of
// tokens in the step, S the number of sequences.
//
//===----------------------------------------------------------------------===//

#ifndef LLMSERVE_IR_LLMSERVEOPS_TD
#define LLMSERVE_IR_LLMSERVEOPS_TD

include "llmserve/IR/LlmserveBase.td"
include "llmserve/IR/LlmserveEnums.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Weights and embeddings
//===----------------------------------------------------------------------===//

def Llmserve_WeightOp : Llmserve_Op<"weight", [Pure]> {
  let summary = "a named checkpoint tensor";
  let description = [{
    The tensor `tensor_name` of the model's checkpoint. The result type gives
    its shape and the element type the kernels want; the runtime converts the
    stored dtype when it loads the weight.

    With `transposed`, the stored tensor is 2-D and the result is its
    transpose: a checkpoint that stores `[in, out]` (GPT-2's `Conv1D`) yields
    the `[out, in]` weight that `llmserve.linear` takes.

    With `rows [begin, end]`, the result is rows `[begin, end)` of the
    (transposed) tensor: one part of a fused projection such as GPT-2's
    `c_attn`, whose q, k and v are row blocks.

    With `quantized <scheme> <part>`, the runtime quantizes the (transposed,
    sliced) 2-D tensor by `scheme` when it loads it, and the result is one
    of its arrays: for `int8_channel`, `values` is the i8 [N, K] matrix and
    `scales` the f32 [N] scale of each row.

    With `from <checkpoint>` too, the checkpoint already holds the linear
    quantized, in the layout `checkpoint` names (GPTQ's, AWQ's or
    compressed-tensors' 4-bit pack-quantized), and `tensor_name` is the
    linear's module (its `qweight`, `qzeros`, `scales` and GPTQ's `g_idx`;
    or its `weight_packed`, `weight_scale` and `weight_shape`). Under `quantized int4_group128` the runtime unpacks
    them into `values`, `scales` and `zeros`, the i8 [N, K / 128] zero point
    z in [0, 16] of each row and group, for w = (values + 8 - z) * scales:
    as stored when each group is 128 consecutive columns, else (act-order)
    quantized again from the dequantized weight, with zero points of 8.
    Under another scheme, or unquantized, the weight is dequantized first.

    With `from fp8_block128` (quantized or not), `tensor_name` is an FP8
    e4m3 weight of an FP8 checkpoint and `<tensor_name>_scale_inv` its
    scales, one per block of 128 x 128: the runtime dequantizes it first,
    then reads it as any float tensor; but under `quantized fp8_block128`
    it reads them as stored, `values` the f8E4M3FN [N, K] codes and
    `scales` the f32 [ceil(N / 128), ceil(K / 128)] scales (with `rows`,
    which start at a block, the blocks those rows span). `from compressed_tensors` is the
    same for an FP8 or int8 weight of a compressed-tensors checkpoint, whose
    module's `weight_scale` holds one scale for the tensor, one per row, per
    group of columns or per block of 128 x 128.

    With `stacked <E>`, the result's leading dimension is E and slice e of
    it is the tensor named by `tensor_name` with its one `{}` replaced by e
    (transposed, sliced and quantized as said here, each on its own): the
    experts of a mixture-of-experts layer, which checkpoints store one
    tensor each. Stacked weights are quantized by `int8_channel` only: the
    values are i8 [E, N, K] and the scales f32 [E, N].

    Example:

    ```mlir
    %w = llmserve.weight "model.layers.0.mlp.up_proj.weight" : tensor<128x64xf32>
    %e = llmserve.weight "model.layers.0.mlp.experts.{}.up_proj.weight" stacked 8
        : tensor<8x128x64xf32>
    %c = llmserve.weight "h.0.attn.c_attn.weight" transposed : tensor<192x64xf16>
    %q = llmserve.weight "h.0.attn.c_attn.weight" transposed rows [0, 64] : tensor<64x64xf32>
    %v = llmserve.weight "lm_head.weight" quantized int8_channel values : tensor<512x64xi8>
    %s = llmserve.weight "lm_head.weight" quantized int8_channel scales : tensor<512xf32>
    %z = llmserve.weight "model.layers.0.mlp.up_proj" quantized int4_group128 zeros from awq
        : tensor<512x2xi8>
    %f = llmserve.weight "model.layers.0.mlp.down_proj.weight" from fp8_block128
        : tensor<64x512xf32>
    ```
  }];
  let arguments = (ins StrAttr:$tensor_name,
                       OptionalAttr<I64Attr>:$stacked,
                       UnitAttr:$transposed,
                       OptionalAttr<DenseI64ArrayAttr>:$rows,
                       OptionalAttr<Llmserve_WeightQuantizationAttr>:$quantization,
                       OptionalAttr<Llmserve_QuantizedPartAttr>:$part,
                       OptionalAttr<Llmserve_QuantizedCheckpointAttr>:$checkpoint);
  let results = (outs Llmserve_WeightTensor:$result);
  let assemblyFormat = [{
    $tensor_name (`stacked` $stacked^)? (`transposed` $transposed^)? (`rows` $rows^)?
    (`quantized` `` $quantization^ `` $part)? (`from` `` $checkpoint^)?
    attr-dict `:` type($result)
  }];
  let extraClassDeclaration = [{
    ::mlir::LogicalResult verifyFp8Block128();
  }];
}

def Llmserve_EmbeddingOp : Llmserve_Op<"embedding", [Pure]> {
  let summary = "token embedding lookup";
  let description = [{
    Row `ids[t]` of `table` [V, D] for each token t, times `scale` when it
    is given (Gemma's sqrt(D)): the result is [T, D]. Every id must be in
    [0, V).

    Example:

    ```mlir
    %x = llmserve.embedding %table, %ids
        : tensor<32000x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
    %g = llmserve.embedding %table, %ids scale 8.0
        : tensor<32000x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Llmserve_FloatTensor2D:$table,
                       Llmserve_I32Tensor1D:$ids,
                       OptionalAttr<F32Attr>:$scale);
  let results = (outs Llmserve_FloatTensor2D:$result);
  let assemblyFormat = [{
    $table `,` $ids (`scale` $scale^)? attr-dict `:` type($table) `,` type($ids)
    `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

// rms_norm and layer_norm share the fused residual add: with a `residual`
// operand, s = input + residual is normalized and also returned as
// `residual_out`, the next layer's residual stream.
class Llmserve_NormOp<string mnemonic>
    : Llmserve_Op<mnemonic, [Pure, InferTypeOpAdaptor]> {
  let results = (outs Llmserve_FloatTensor2D:$result,
                      Optional<Llmserve_FloatTensor2D>:$residual_out);
}

def Llmserve_RmsNormOp : Llmserve_NormOp<"rms_norm"> {
  let summary = "RMS normalization with an optional fused residual add";
  let description = [{
    Normalizes each row of `input` [T, D] by its root mean square:

    ```
    s = input + residual            (s = input without `residual`)
    result = s * rsqrt(mean(s^2, over D) + epsilon) * weight
    residual_out = s                (only with `residual`)
    ```

    `weight` is [D], or [G] for a G that divides D: then each row is
    normalized as D / G separate groups of G elements with the same weight
    (the per-head q and k norms of Qwen3 and Gemma 3, G = head_dim).
    `weight_offset` is added to the weight (Gemma's `(1 + weight)`).
    `residual`, `result` and `residual_out` have the type of `input`. The
    mean is accumulated in f32 whatever the element type.

    Example:

    ```mlir
    %y = llmserve.rms_norm %x, %w epsilon 1.0e-06
        : tensor<?x64xf32>, tensor<64xf32>
    %qn = llmserve.rms_norm %q, %qw epsilon 1.0e-06
        : tensor<?x256xf32>, tensor<64xf32>
    %g = llmserve.rms_norm %x, %w epsilon 1.0e-06 weight_offset 1.0
        : tensor<?x64xf32>, tensor<64xf32>
    %y2, %s = llmserve.rms_norm %attn, %w residual %x epsilon 1.0e-06
        : tensor<?x64xf32>, tensor<64xf32>, tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Llmserve_FloatTensor2D:$input,
                       Llmserve_FloatTensor1D:$weight,
                       Optional<Llmserve_FloatTensor2D>:$residual,
                       F32Attr:$epsilon,
                       DefaultValuedAttr<F32Attr, "0.0">:$weight_offset);
  let assemblyFormat = [{
    $input `,` $weight (`residual` $residual^)? `epsilon` $epsilon
    (`weight_offset` $weight_offset^)? attr-dict
    `:` type($input) `,` type($weight) (`,` type($residual)^)?
  }];
}

def Llmserve_LayerNormOp : Llmserve_NormOp<"layer_norm"> {
  let summary = "layer normalization with an optional fused residual add";
  let description = [{
    Normalizes each row of `input` [T, D] to zero mean and unit variance:

    ```
    s = input + residual            (s = input without `residual`)
    result = (s - mean(s)) * rsqrt(var(s) + epsilon) * weight + bias
    residual_out = s                (only with `residual`)
    ```

    The mean and the (biased) variance are over D and accumulated in f32.
    `weight` and `bias` are [D], or both [G] for a G that divides D, which
    normalizes each row as D / G groups as rms_norm does. `residual`, `result` and `residual_out` have
    the type of `input`.

    Example:

    ```mlir
    %y = llmserve.layer_norm %x, %w, %b epsilon 1.0e-05
        : tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>
    %y2, %s = llmserve.layer_norm %attn, %w, %b residual %x epsilon 1.0e-05
        : tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Llmserve_FloatTensor2D:$input,
                       Llmserve_FloatTensor1D:$weight,
                       Llmserve_FloatTensor1D:$bias,
                       Optional<Llmserve_FloatTensor2D>:$residual,
                       F32Attr:$epsilon);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias (`residual` $residual^)? `epsilon` $epsilon
    attr-dict `:` type($input) `,` type($weight) `,` type($bias)
    (`,` type($residual)^)?
  }];
}

//===----------------------------------------------------------------------===//
// Linear algebra and position encoding
//===----------------------------------------------------------------------===//

def Llmserve_LinearOp : Llmserve_Op<"linear", [Pure, AttrSizedOperandSegments,
    OptionalTypesMatchWith<"scales has one f32 per row of an i8 weight, "
        "per row and group of 128 columns of an i4 one, and per block of 128 "
        "x 128 of an f8E4M3FN one",
        "weight", "scales", "::mlir::llmserve::quantizedScalesType($_self)">,
    OptionalTypesMatchWith<"zeros has one i8 per row and group of 128 "
        "columns of an i4 weight",
        "weight", "zeros", "::mlir::llmserve::quantizedZerosType($_self)">,
    OptionalTypesMatchWith<"input_scales has one f32 per row and group of "
        "128 columns of an f8E4M3FN input",
        "input", "input_scales",
        "::mlir::llmserve::activationScalesType($_self)">]> {
  let summary = "x·Wᵀ + b";
  let description = [{
    `result[m, n] = sum_k input[m, k] * weight[n, k] + bias[n]`, with `input`
    [M, K], `weight` [N, K] (the PyTorch `nn.Linear` layout), the optional
    `bias` [N] and the result [M, N]. Products are accumulated in f32. The
    result has the input's element type, or f32 when the input is f16 or
    bf16 (the logits of a model stored narrow). An f32 input may read an
    f16 or bf16 weight, widened as it is read.

    An i8 `weight` comes with `scales` [N], one f32 per row:
    `result[m, n] = (sum_k input[m, k] * weight[n, k]) * scales[n] + bias[n]`
    (an `int8_channel` quantized weight). An i4 `weight` (K a multiple of
    128) comes with `scales` [N, K / 128], one f32 per row and group of 128
    columns: `result[m, n] = sum_k input[m, k] * weight[n, k] *
    scales[n, k / 128] + bias[n]` (`int4_group128`). With `zeros` [N, K /
    128] (i8, each in [0, 16]: a GPTQ or AWQ checkpoint's zero points),
    `weight[n, k]` counts as `weight[n, k] + 8 - zeros[n, k / 128]`. An
    f8E4M3FN `weight` (an FP8 checkpoint's codes, `fp8_block128`) comes with
    `scales` [ceil(N / 128), ceil(K / 128)], one f32 per block of 128 x 128:
    `result[m, n] = sum_k input[m, k] * weight[n, k] * scales[n / 128, k /
    128] + bias[n]`.

    An f8E4M3FN `input` (x quantized by `llmserve.quantize_fp8`) comes with
    `input_scales` [M, ceil(K / 128)], one f32 per row and group of 128
    columns, and an f8E4M3FN weight: `result[m, n] = sum_k input[m, k] *
    input_scales[m, k / 128] * weight[n, k] * scales[n / 128, k / 128] +
    bias[n]`, of the bias's type (W8A8: both operands on the FP8 tensor
    cores).

    Example:

    ```mlir
    %y = llmserve.linear %x, %w : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
    %z = llmserve.linear %x, %w bias %b
        : tensor<?x64xf32>, tensor<128x64xf32>, tensor<128xf32> -> tensor<?x128xf32>
    %q = llmserve.linear %x, %v scales %s
        : tensor<?x64xf32>, tensor<128x64xi8> -> tensor<?x128xf32>
    %r = llmserve.linear %x, %v4 scales %s4
        : tensor<?x256xf32>, tensor<128x256xi4> -> tensor<?x128xf32>
    %f = llmserve.linear %c input_scales %cs, %w8 scales %s8
        : tensor<?x256xf8E4M3FN>, tensor<128x256xf8E4M3FN> -> tensor<?x128xbf16>
    ```
  }];
  let arguments = (ins Llmserve_LinearInput:$input,
                       Llmserve_LinearWeight:$weight,
                       Optional<Llmserve_F32Tensor>:$scales,
                       Optional<2DTensorOf<[I8]>>:$zeros,
                       Optional<Llmserve_FloatTensor1D>:$bias,
                       Optional<Llmserve_F32Tensor2D>:$input_scales);
  let results = (outs Llmserve_FloatTensor2D:$result);
  let assemblyFormat = [{
    $input (`input_scales` $input_scales^)? `,` $weight (`scales` $scales^)?
    (`zeros` $zeros^)? (`bias` $bias^)? attr-dict `:` type($input) `,`
    type($weight) (`,` type($bias)^)? `->` type($result)
  }];
  let builders = [
    OpBuilder<(ins "Type":$result, "Value":$input, "Value":$weight,
                   "Value":$bias), [{
      build($_builder, $_state, result, input, weight, /*scales=*/Value(),
            /*zeros=*/Value(), bias, /*input_scales=*/Value());
    }]>
  ];
}

def Llmserve_QuantizeFp8Op : Llmserve_Op<"quantize_fp8", [Pure,
    TypesMatchWith<"scales has one f32 per row and group of 128 columns of "
        "input", "input", "scales",
        "::mlir::llmserve::activationScalesType($_self)">]> {
  let summary = "x as FP8 e4m3 codes with a scale per row and group of 128";
  let description = [{
    Dynamic per-token-group quantization of `input` [M, K] for a W8A8
    `llmserve.linear`: for row m and group g of 128 columns (the last may
    have fewer),

    ```
    scales[m, g] = max(max_{k in g} |input[m, k]|, 1e-10) / 448
    codes[m, k]  = input[m, k] / scales[m, k / 128], rounded to the nearest
                   e4m3 value (ties to even)
    ```

    both in f32, so that every row's codes depend on that row alone. 448 is
    e4m3's largest value, which the group's largest magnitude maps to.

    Example:

    ```mlir
    %c, %s = llmserve.quantize_fp8 %x : tensor<?x256xbf16> -> tensor<?x256xf8E4M3FN>
    ```
  }];
  let arguments = (ins Llmserve_FloatTensor2D:$input);
  let results = (outs 2DTensorOf<[F8E4M3FN]>:$codes,
                      Llmserve_F32Tensor2D:$scales);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($codes)";
}

def Llmserve_RopeOp : Llmserve_Op<"rope",
    [Pure, AllTypesMatch<["input", "result"]>, AttrSizedOperandSegments]> {
  let summary = "rotary position embedding";
  let description = [{
    Rotates the first `rotary_dim` channels of every `head_dim`-wide head of
    `input` [T, H * head_dim] by angles proportional to the token's position;
    the other channels pass through. For token t at `p = positions[t]` and
    pair `i` in [0, rotary_dim / 2):

    ```
    freq_i = theta^(-2i / rotary_dim)          (then rescaled, see below)
    (x, y) -> (x cos(p freq_i) - y sin(p freq_i), y cos(p freq_i) + x sin(p freq_i))
    ```

    `style` chooses the pairs: `neox` pairs channel `i` with `i + rotary_dim/2`
    (rotate-half, Llama), `gptj` pairs `2i` with `2i + 1` (interleaved).

    `scaling` rescales the frequencies for contexts longer than training:
    - `none` (the default): no attributes.
    - `linear`: `freq_i / scaling_factor`; needs `scaling_factor`.
    - `llama3` (Llama 3.1): wavelengths `2π / freq_i` longer than
      `original_max_position / low_freq_factor` get `freq_i / scaling_factor`,
      those shorter than `original_max_position / high_freq_factor` keep
      `freq_i`, and in between `(1 - a) freq_i / scaling_factor + a freq_i`
      with `a = (original_max_position / wavelength - low_freq_factor) /
      (high_freq_factor - low_freq_factor)`; needs all four attributes.
    - `longrope` (Phi-3's LongRoPE): `freq_i / short_factor[i]` for the
      tokens of a sequence whose context after the step (`context_len`) is
      at most `original_max_position`, `freq_i / long_factor[i]` for those
      of a longer one, and cos and sin times `attention_factor`. Needs those
      four attributes (the factors as f32 tensors of rotary_dim / 2 entries)
      and the step's `context_len` [S] and `query_start` [S + 1], which place
      token t in the sequence s with
      `query_start[s] <= t < query_start[s + 1]` (as in `paged_attention`).
      The choice is per sequence, so a token's result does not depend on the
      other sequences of its step.

    Example:

    ```mlir
    %q = llmserve.rope %x, %pos style neox head_dim 64 rotary_dim 64
        theta 1.000000e+04 : tensor<?x256xf32>, tensor<?xi32>
    %k = llmserve.rope %x, %pos style neox head_dim 64 rotary_dim 64
        theta 5.000000e+05 scaling llama3 scaling_factor 8.000000e+00
        low_freq_factor 1.000000e+00 high_freq_factor 4.000000e+00
        original_max_position 8192 : tensor<?x256xf32>, tensor<?xi32>
    %p = llmserve.rope %x, %pos context_len %cl query_start %qs style neox
        head_dim 64 rotary_dim 8 theta 1.000000e+04 scaling longrope
        original_max_position 4096
        short_factor dense<[1.0, 1.0, 1.0, 1.0]> : tensor<4xf32>
        long_factor dense<[1.0, 2.0, 4.0, 8.0]> : tensor<4xf32>
        attention_factor 1.19
        : tensor<?x256xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
    ```
  }];
  let arguments = (ins
    Llmserve_FloatTensor2D:$input,
    Llmserve_I32Tensor1D:$positions,
    Optional<Llmserve_I32Tensor1D>:$context_len,
    Optional<Llmserve_I32Tensor1D>:$query_start,
    I64Attr:$head_dim,
    I64Attr:$rotary_dim,
    F64Attr:$theta,
    Llmserve_RopeStyleAttr:$style,
    DefaultValuedAttr<Llmserve_RopeScalingAttr,
                      "::mlir::llmserve::RopeScaling::none">:$scaling,
    OptionalAttr<F64Attr>:$scaling_factor,
    OptionalAttr<F64Attr>:$low_freq_factor,
    OptionalAttr<F64Attr>:$high_freq_factor,
    OptionalAttr<I64Attr>:$original_max_position,
    // Tensors, not dense arrays: a dense array's custom form prints floats
    // with six digits, which would not read back to the same factors.
    OptionalAttr<FloatElementsAttr<32>>:$short_factor,
    OptionalAttr<FloatElementsAttr<32>>:$long_factor,
    OptionalAttr<F64Attr>:$attention_factor);
  let results = (outs Llmserve_FloatTensor2D:$result);
  let assemblyFormat = [{
    $input `,` $positions
    (`context_len` $context_len^ `query_start` $query_start)?
    `style` `` $style `head_dim` $head_dim
    `rotary_dim` $rotary_dim `theta` $theta (`scaling` `` $scaling^)?
    (`scaling_factor` $scaling_factor^)?
    (`low_freq_factor` $low_freq_factor^)?
    (`high_freq_factor` $high_freq_factor^)?
    (`original_max_position` $original_max_position^)?
    (`short_factor` $short_factor^)?
    (`long_factor` $long_factor^)?
    (`attention_factor` $attention_factor^)?
    attr-dict `:` type($input) `,` type($positions)
    (`,` type($context_len)^ `,` type($query_start))?
  }];
}

//===----------------------------------------------------------------------===//
// Paged KV cache and attention
//===----------------------------------------------------------------------===//

def Llmserve_KvWriteOp : Llmserve_Op<"kv_write", [
    DestinationStyleOpInterface, AllTypesMatch<["cache", "result"]>]> {
  let summary = "scatter new keys or values into the paged KV cache";
  let description = [{
    Writes row t of `input` [T, Hkv * D] into cache slot `slot_mapping[t]`:
    block `slot_mapping[t] / BS`, offset `slot_mapping[t] % BS` of `cache`
    [NB, BS, Hkv, D], viewing the row as [Hkv, D]. The result is the updated
    cache. `cache` is the op's destination (`DestinationStyleOpInterface`), so
    bufferization writes the cache in place. Every slot must be in
    [0, NB * BS) and appear once.

    A cache of `f8E4M3FN` (OCP FP8 e4m3) takes its `scale`: one for the
    whole cache, or one per KV head. Element x of head h is stored as
    x / scale[h] (or x / scale[0]) rounded to the nearest e4m3 value (ties to
    even), saturated to +-448. Caches of the input's own type have no scale.

    Example:

    ```mlir
    %kc2 = llmserve.kv_write %k into %kc at %slots
        : tensor<?x128xf16>, tensor<?x16x2x64xf16>, tensor<?xi32>
    %vc2 = llmserve.kv_write %v into %vc at %slots scale [1.250000e-01]
        : tensor<?x128xbf16>, tensor<?x16x2x64xf8E4M3FN>, tensor<?xi32>
    %fc2 = llmserve.kv_write %v into %fc at %slots
        scale [2.500000e-02, 1.875000e-02]
        : tensor<?x128xbf16>, tensor<?x16x2x64xf8E4M3FN>, tensor<?xi32>
    ```
  }];
  let arguments = (ins Llmserve_FloatTensor2D:$input,
                       Llmserve_KvCache:$cache,
                       Llmserve_I32Tensor1D:$slot_mapping,
                       OptionalAttr<DenseF32ArrayAttr>:$scale);
  let results = (outs Llmserve_KvCache:$result);
  let assemblyFormat = [{
    $input `into` $cache `at` $slot_mapping (`scale` $scale^)? attr-dict `:`
    type($input) `,` type($cache) `,` type($slot_mapping)
  }];
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return getCacheMutable();
    }
  }];
}

def Llmserve_PagedAttentionOp : Llmserve_Op<"paged_attention", [Pure,
    AllTypesMatch<["query", "result"]>,
    AllTypesMatch<["key_cache", "value_cache"]>]> {
  let summary = "causal attention of a step's queries over the paged KV cache";
  let description = [{
    `query` [T, Hq * D] holds the step's queries; `key_cache` and
    `value_cache` [NB, BS, Hkv, D] hold every sequence's keys and values, the
    step's own already written by `llmserve.kv_write`. `num_heads` is Hq, a
    multiple of Hkv; query head h reads KV head `h / (Hq / Hkv)` (grouped-query
    attention).

    Query row i belongs to sequence s with
    `query_start[s] <= i < query_start[s + 1]` (`query_start` is [S + 1]).
    With `q_len = query_start[s + 1] - query_start[s]`, its position is
    `p = context_len[s] - q_len + (i - query_start[s])`, and it attends to
    the KV positions j in [0, p] (and `j > p - sliding_window` when
    `sliding_window` is set). KV position j of sequence s lives in block
    `block_table[s][j / BS]` at offset `j % BS`; `block_table` is [S, MB].

    ```
    score[j] = scale * dot(query[i, h], key[j, h / (Hq / Hkv)])
    score[j] = softcap * tanh(score[j] / softcap)    (only with `softcap`)
    result[i, h] = sum_j softmax(score)[j] * value[j, h / (Hq / Hkv)]
    lse[i, h] = log(sum_j exp(score[j]))
    ```

    `softcap` is Gemma 2's `attn_logit_softcapping`.

    `lse` [T, Hq] is f32 whatever the element type, so that partial results
    over disjoint KV ranges can be merged.

    Caches of `f8E4M3FN` hold keys and values divided by `kv_scales`
    (`kv_write`'s scales, one per cache or one per KV head): the op reads
    key x of KV head g as x * key_scale[g] and value y as y * value_scale[g]
    (or x * key_scale[0] and y * value_scale[0]). Caches of the query's type
    have no scales.

    Example:

    ```mlir
    %o, %lse = llmserve.paged_attention %q, %kc, %vc block_table %bt
        context_len %cl query_start %qs num_heads 8 scale 1.250000e-01
        : tensor<?x512xf16>, tensor<?x16x2x64xf16>, tensor<?x?xi32>,
          tensor<?xi32>, tensor<?xi32> -> tensor<?x8xf32>
    ```
  }];
  let arguments = (ins Llmserve_FloatTensor2D:$query,
                       Llmserve_KvCache:$key_cache,
                       Llmserve_KvCache:$value_cache,
                       Llmserve_I32Tensor2D:$block_table,
                       Llmserve_I32Tensor1D:$context_len,
                       Llmserve_I32Tensor1D:$query_start,
                       I64Attr:$num_heads,
                       F32Attr:$scale,
                       OptionalAttr<I64Attr>:$sliding_window,
                       OptionalAttr<F32Attr>:$softcap,
                       OptionalAttr<DenseF32ArrayAttr>:$key_scale,
                       OptionalAttr<DenseF32ArrayAttr>:$value_scale);
  let results = (outs Llmserve_FloatTensor2D:$result,
                      Llmserve_F32Tensor2D:$lse);
  let assemblyFormat = [{
    $query `,` $key_cache `,` $value_cache `block_table` $block_table
    `context_len` $context_len `query_start` $query_start
    `num_heads` $num_heads `scale` $scale
    (`sliding_window` $sliding_window^)? (`softcap` $softcap^)?
    (`kv_scales` $key_scale^ `,` $value_scale)? attr-dict
    `:` type($query) `,` type($key_cache) `,` type($block_table) `,`
    type($context_len) `,` type($query_start) `->` type($lse)
  }];
}

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

def Llmserve_SiluMulOp : Llmserve_Op<"silu_mul",
    [Pure, AllTypesMatch<["gate", "up", "result"]>]> {
  let summary = "silu(gate) * up, the gated MLP activation";
  let description = [{
    Elementwise `gate * sigmoid(gate) * up` over [T, F] (SwiGLU).

    Example:

    ```mlir
    %h = llmserve.silu_mul %gate, %up : tensor<?x256xf32>
    ```
  }];
  let arguments = (ins Llmserve_FloatTensor2D:$gate,
                       Llmserve_FloatTensor2D:$up);
  let results = (outs Llmserve_FloatTensor2D:$result);
  let assemblyFormat = "$gate `,` $up attr-dict `:` type($gate)";
  // The type constraints above are the whole contract.
  let hasVerifier = 0;
}

def Llmserve_SoftcapOp : Llmserve_Op<"softcap",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "tanh soft-capping: cap * tanh(x / cap)";
  let description = [{
    Elementwise `cap * tanh(x / cap)`, which keeps values within (-cap, cap)
    (Gemma 2's `final_logit_softcapping` on the logits).

    Example:

    ```mlir
    %l = llmserve.softcap %logits cap 3.0e+01 : tensor<?x256000xf32>
    ```
  }];
  let arguments = (ins Llmserve_FloatTensor2D:$input, F32Attr:$cap);
  let results = (outs Llmserve_FloatTensor2D:$result);
  let assemblyFormat = "$input `cap` $cap attr-dict `:` type($input)";
}

def Llmserve_GeluMulOp : Llmserve_Op<"gelu_mul",
    [Pure, AllTypesMatch<["gate", "up", "result"]>]> {
  let summary = "gelu(gate) * up, the GeGLU activation";
  let description = [{
    Elementwise `gelu(gate) * up` over [T, F] (GeGLU, Gemma's MLP), with
    `gelu`'s `approximation`.

    Example:

    ```mlir
    %h = llmserve.gelu_mul %gate, %up approximation tanh : tensor<?x256xf32>
    ```
  }];
  let arguments = (ins
    Llmserve_FloatTensor2D:$gate,
    Llmserve_FloatTensor2D:$up,
    DefaultValuedAttr<Llmserve_GeluApproximationAttr,
                      "::mlir::llmserve::GeluApproximation::none">:$approximation);
  let results = (outs Llmserve_FloatTensor2D:$result);
  let assemblyFormat = [{
    $gate `,` $up (`approximation` `` $approximation^)? attr-dict `:` type($gate)
  }];
  // The type constraints above are the whole contract.
  let hasVerifier = 0;
}

def Llmserve_GeluOp : Llmserve_Op<"gelu",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "Gaussian error linear unit";
  let description = [{
    Elementwise GELU: `x * Φ(x)` with `approximation` `none` (the default,
    `Φ(x) = 0.5 (1 + erf(x / sqrt(2)))`) or `tanh`
    (`Φ(x) ≈ 0.5 (1 + tanh(sqrt(2 / π) (x + 0.044715 x³)))`, GPT-2's
    `gelu_new`).

    Example:

    ```mlir
    %h = llmserve.gelu %x : tensor<?x256xf32>
    %g = llmserve.gelu %x approximation tanh : tensor<?x256xf32>
    ```
  }];
  let arguments = (ins
    Llmserve_FloatTensor:$input,
    DefaultValuedAttr<Llmserve_GeluApproximationAttr,
                      "::mlir::llmserve::GeluApproximation::none">:$approximation);
  let results = (outs Llmserve_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`approximation` `` $approximation^)? attr-dict `:` type($input)
  }];
  // The type constraints above are the whole contract.
  let hasVerifier = 0;
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

def Llmserve_MoeRouterOp : Llmserve_Op<"moe_router", [Pure]> {
  let summary = "each token's top-k experts and their weights";
  let description = [{
    From the router's logits [T, E], each token's `top_k` experts and their
    weights. The scores are the row's softmax (`scoring softmax`) or each
    logit's sigmoid (`scoring sigmoid`), computed in f32. `experts[t, j]` is
    the expert of the j-th highest score (the lower index first on a tie)
    and `weights[t, j]` its score, divided by the sum of the `top_k` chosen
    scores with `normalized` (`norm_topk_prob`; Mixtral's softmax over the
    chosen logits is the same).

    Example:

    ```mlir
    %w, %e = llmserve.moe_router %logits top_k 2 scoring softmax normalized
        : tensor<?x8xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
    ```
  }];
  let arguments = (ins Llmserve_FloatTensor2D:$logits,
                       ConfinedAttr<I64Attr, [IntPositive]>:$top_k,
                       Llmserve_MoeScoringAttr:$scoring,
                       UnitAttr:$normalized);
  let results = (outs Llmserve_F32Tensor2D:$weights,
                      Llmserve_I32Tensor2D:$experts);
  let assemblyFormat = [{
    $logits `top_k` $top_k `scoring` `` $scoring (`normalized` $normalized^)?
    attr-dict `:` type($logits) `->` type($weights) `,` type($experts)
  }];
}

def Llmserve_ExpertLinearOp : Llmserve_Op<"expert_linear", [Pure,
    OptionalTypesMatchWith<"scales has one f32 per expert and row of an i8 "
        "weight", "weight", "scales",
        "::mlir::llmserve::expertScalesType($_self)">]> {
  let summary = "x·Wₑᵀ for each token's chosen experts";
  let description = [{
    One linear per (token, slot) pair, with the weight of the expert the
    router chose for it: for `experts` [T, k] and `weight` [E, N, K] (one
    `llmserve.linear` weight per expert), the result [T * k, N] is
    `result[t * k + j, n] = sum_c input[r, c] * weight[experts[t, j], n, c]`,
    accumulated in f32. The input row r is t: the token's own row of an
    input [T, K], which each of its k slots reads; or with `per_slot`, t * k
    + j: an input [T * k, K] of one row per slot (what a previous
    expert_linear yields). Every expert id must be in [0, E).

    An i8 `weight` (each expert's `int8_channel` values) comes with `scales`
    [E, N], one f32 per expert and row, which multiplies that row's sum. An
    f32 input may read f16 or bf16 experts, widened as they are read.

    Kernels take the pairs of each expert together, so that its weight is
    read once per step however many tokens chose it; a row's result does
    not depend on the other rows of the step.

    Example:

    ```mlir
    %up = llmserve.expert_linear %x, %w experts %e
        : tensor<?x64xf32>, tensor<8x128x64xf32>, tensor<?x2xi32> -> tensor<?x128xf32>
    %down = llmserve.expert_linear %h, %w2 experts %e per_slot
        : tensor<?x128xf32>, tensor<8x64x128xf32>, tensor<?x2xi32> -> tensor<?x64xf32>
    %q = llmserve.expert_linear %x, %v scales %s experts %e
        : tensor<?x64xf32>, tensor<8x128x64xi8>, tensor<?x2xi32> -> tensor<?x128xf32>
    ```
  }];
  let arguments = (ins Llmserve_FloatTensor2D:$input,
                       3DTensorOf<[F32, F16, BF16, I8]>:$weight,
                       Optional<Llmserve_F32Tensor>:$scales,
                       Llmserve_I32Tensor2D:$experts,
                       UnitAttr:$per_slot);
  let results = (outs Llmserve_FloatTensor2D:$result);
  let assemblyFormat = [{
    $input `,` $weight (`scales` $scales^)? `experts` $experts
    (`per_slot` $per_slot^)? attr-dict
    `:` type($input) `,` type($weight) `,` type($experts) `->` type($result)
  }];
  let builders = [
    OpBuilder<(ins "Type":$result, "Value":$input, "Value":$weight,
                   "Value":$experts, "bool":$perSlot), [{
      build($_builder, $_state, result, input, weight, /*scales=*/Value(),
            experts, perSlot);
    }]>
  ];
}

def Llmserve_MoeCombineOp : Llmserve_Op<"moe_combine", [Pure]> {
  let summary = "each token's weighted sum of its experts' outputs";
  let description = [{
    `result[t, n] = sum_j weights[t, j] * input[t * k + j, n]` for `input`
    [T * k, N] (an expert_linear's rows) and `weights` [T, k] (the router's),
    summed in f32 in the order j = 0, 1, ..., k - 1, so a token's result
    does not depend on the other tokens of the step.

    Example:

    ```mlir
    %y = llmserve.moe_combine %down, %w
        : tensor<?x64xf32>, tensor<?x2xf32> -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Llmserve_FloatTensor2D:$input,
                       Llmserve_F32Tensor2D:$weights);
  let results = (outs Llmserve_FloatTensor2D:$result);
  let assemblyFormat = [{
    $input `,` $weights attr-dict `:` type($input) `,` type($weights) `->`
    type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Logits and sampling
//===----------------------------------------------------------------------===//

def Llmserve_GatherRowsOp : Llmserve_Op<"gather_rows", [Pure]> {
  let summary = "pick rows of a [T, D] tensor";
  let description = [{
    `result[s] = input[rows[s]]`: the result is [S, D]. The step uses it to
    keep only the hidden state that produces each sequence's next-token
    logits. Every row index must be in [0, T).

    Example:

    ```mlir
    %last = llmserve.gather_rows %h, %rows
        : tensor<?x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Llmserve_FloatTensor2D:$input,
                       Llmserve_I32Tensor1D:$rows);
  let results = (outs Llmserve_FloatTensor2D:$result);
  let assemblyFormat = [{
    $input `,` $rows attr-dict `:` type($input) `,` type($rows) `->`
    type($result)
  }];
}

def Llmserve_AdjustLogitsOp : Llmserve_Op<"adjust_logits", [Pure]> {
  let summary = "penalties, logit bias and allowed-token masks on logits rows";
  let description = [{
    Returns `logits` [S, V] as each sequence samples from them. Row `s` owns
    the entries `[entries[s], entries[s+1])` of `tokens`, `counts` and
    `bias` [P]: distinct tokens, each with how many times it occurs in the
    sequence's output (0: in its prompt only; -1: in neither) and a bias.
    For each such token in `[0, V)` (others are ignored):

    - if its count is not negative, the penalties as vLLM and the OpenAI API
      define them: `repetition_penalty[s]` (f32, 1 = off) divides a positive
      logit and multiplies any other; `frequency_penalty[s]` times the count
      and, if the count is positive, `presence_penalty[s]` are subtracted;
    - then its `bias` (f32, below +inf) is added.

    Then, if `mask_index[s]` is `m >= 0`, only the tokens whose bits are set
    in row `m` of `mask` (i32 words, rows of ceil(V/32), bit `v % 32` of word
    `v / 32` for token `v`) keep their logits; the others become -inf. A row
    `m` past the end of `mask` masks nothing. Rows with no entries and no
    mask are copied.

    Example:

    ```mlir
    %out = llmserve.adjust_logits %logits entries %start tokens %tok
        counts %cnt bias %bias presence %pp frequency %fp repetition %rp
        mask_index %mi mask %m : tensor<?x32000xf32>, tensor<?xi32>,
        tensor<?xi32>, tensor<?xi32>, tensor<?xf32>, tensor<?xf32>,
        tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xi32>
        -> tensor<?x32000xf32>
    ```
  }];
  let arguments = (ins Llmserve_FloatTensor2D:$logits,
                       Llmserve_I32Tensor1D:$entries,
                       Llmserve_I32Tensor1D:$tokens,
                       Llmserve_I32Tensor1D:$counts,
                       Llmserve_F32Tensor1D:$bias,
                       Llmserve_F32Tensor1D:$presence_penalty,
                       Llmserve_F32Tensor1D:$frequency_penalty,
                       Llmserve_F32Tensor1D:$repetition_penalty,
                       Llmserve_I32Tensor1D:$mask_index,
                       Llmserve_I32Tensor1D:$mask);
  let results = (outs Llmserve_FloatTensor2D:$result);
  let assemblyFormat = [{
    $logits `entries` $entries `tokens` $tokens `counts` $counts `bias` $bias
    `presence` $presence_penalty `frequency` $frequency_penalty `repetition`
    $repetition_penalty `mask_index` $mask_index `mask` $mask attr-dict
    `:` type($logits) `,` type($entries) `,` type($tokens) `,` type($counts)
    `,` type($bias) `,` type($presence_penalty) `,` type($frequency_penalty)
    `,` type($repetition_penalty) `,` type($mask_index) `,` type($mask)
    `->` type($result)
  }];
}

def Llmserve_LogprobsOp : Llmserve_Op<"logprobs", [Pure]> {
  let summary = "log-probabilities of the sampled tokens and of the top tokens";
  let description = [{
    For each row `s` of `logits` [S, V] with `num_logprobs[s] >= 0`:
    `token_logprob[s]` is the log-softmax of the row at `tokens[s]`, and the
    first `num_logprobs[s]` entries of row `s` of `top_tokens` and
    `top_logprobs` [S, K] are the most likely tokens, most likely first (the
    lower index first on ties), with their log-probabilities; the remaining
    entries are -1 and -inf. Rows with `num_logprobs[s] < 0` are skipped and
    their outputs left undefined. `num_logprobs[s]` must not exceed K.

    The log-probabilities are those of the model's distribution: `logits` as
    the model produced them, before penalties and temperature (vLLM's default
    "raw" log-probs).

    Example:

    ```mlir
    %lp, %top, %toplp = llmserve.logprobs %logits tokens %tok num %n
        : tensor<?x32000xf32>, tensor<?xi32>, tensor<?xi32>
        -> tensor<?xf32>, tensor<?x20xi32>, tensor<?x20xf32>
    ```
  }];
  let arguments = (ins Llmserve_FloatTensor2D:$logits,
                       Llmserve_I32Tensor1D:$tokens,
                       Llmserve_I32Tensor1D:$num_logprobs);
  let results = (outs Llmserve_F32Tensor1D:$token_logprob,
                      Llmserve_I32Tensor2D:$top_tokens,
                      Llmserve_F32Tensor2D:$top_logprobs);
  let assemblyFormat = [{
    $logits `tokens` $tokens `num` $num_logprobs attr-dict
    `:` type($logits) `,` type($tokens) `,` type($num_logprobs)
    `->` type($token_logprob) `,` type($top_tokens) `,` type($top_logprobs)
  }];
}

def Llmserve_SampleOp : Llmserve_Op<"sample", [Pure]> {
  let summary = "sample one token per row of logits";
  let description = [{
    Picks the next token of each of the S sequences from `logits` [S, V],
    with per-sequence parameters, each [S]:

    - `temperature` (f32): 0 picks the argmax (the lowest index on ties);
      otherwise logits are divided by it before the softmax.
    - `top_k` (i32): keep the k most likely tokens; `<= 0` keeps all.
    - `top_p` (f32): keep the smallest set of most likely tokens whose
      probability reaches `top_p`; 1 keeps all.
    - `min_p` (f32): drop tokens whose probability is below `min_p` times the
      most likely one's; 0 keeps all.
    - `seed` (i64) and `rng_offset` (i32): the random draw for a row is a
      function of these two alone, so a request samples the same tokens
      whatever else is in the batch. `rng_offset` counts the request's
      sampled tokens.

    Example:

    ```mlir
    %tok = llmserve.sample %logits temperature %t top_p %p top_k %k min_p %m
        seed %seed rng_offset %off : tensor<?x32000xf32>, tensor<?xf32>,
        tensor<?xf32>, tensor<?xi32>, tensor<?xf32>, tensor<?xi64>,
        tensor<?xi32> -> tensor<?xi32>
    ```
  }];
  let arguments = (ins Llmserve_FloatTensor2D:$logits,
                       Llmserve_F32Tensor1D:$temperature,
                       Llmserve_F32Tensor1D:$top_p,
                       Llmserve_I32Tensor1D:$top_k,
                       Llmserve_F32Tensor1D:$min_p,
                       Llmserve_I64Tensor1D:$seed,
                       Llmserve_I32Tensor1D:$rng_offset);
  let results = (outs Llmserve_I32Tensor1D:$result);
  let assemblyFormat = [{
    $logits `temperature` $temperature `top_p` $top_p `top_k` $top_k
    `min_p` $min_p `seed` $seed `rng_offset` $rng_offset attr-dict
    `:` type($logits) `,` type($temperature) `,` type($top_p) `,`
    type($top_k) `,` type($min_p) `,` type($seed) `,` type($rng_offset)
    `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Dispatch regions
//===----------------------------------------------------------------------===//

def Llmserve_DispatchRegionOp : Llmserve_Op<"dispatch_region",
    [IsolatedFromAbove, SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "ops that run as one kernel";
  let description = [{
    The ops of `body` run as one dispatch: the kernel reads `inputs` (the
    entry block's arguments, in order) and writes the values the body yields;
    what the ops pass between them never leaves the kernel. Formed for the
    CPU by `llmserve-form-dispatch-regions`, which puts an elementwise
    `linalg.generic` (`llmserve-to-linalg`'s form of `silu_mul` or `gelu`)
    together with the `llmserve.linear` ops whose only user it is, so the
    kernel applies the elementwise body to each block of the linears'
    outputs while it is in cache; and for sm_90 by
    `llmserve-group-sibling-linears`, `llmserve-group-sibling-ropes` and
    `llmserve-group-kv-writes`, which put the linears of one input (q, k and
    v; gate and up), or a layer's ropes of one position array (q and k) and
    its kv_writes, in one region yielding their results used outside it, so
    that one kernel computes all of them. A yielded kv_write result is the
    cache the region reads, updated in place.

    Example (a gated MLP's gate and up projections with SiLU):

    ```mlir
    %h = llmserve.dispatch_region(%x, %wg, %wu)
        : (tensor<?x64xf32>, tensor<128x64xf32>, tensor<128x64xf32>) -> tensor<?x128xf32> {
    ^bb0(%in: tensor<?x64xf32>, %gate_w: tensor<128x64xf32>, %up_w: tensor<128x64xf32>):
      %gate = llmserve.linear %in, %gate_w : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
      %up = llmserve.linear %in, %up_w : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
      %0 = llmserve.silu_mul %gate, %up : tensor<?x128xf32>
      llmserve.yield %0 : tensor<?x128xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `(` $inputs `)` attr-dict `:` functional-type($inputs, $results) $body
  }];
}

def Llmserve_YieldOp : Llmserve_Op<"yield",
    [Pure, ReturnLike, Terminator, HasParent<"DispatchRegionOp">]> {
  let summary = "the values a dispatch region writes";
  let description = [{
    Ends a `llmserve.dispatch_region`: its operands are the region's results.
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$values);
  let assemblyFormat = "$values attr-dict `:` type($values)";
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, ::mlir::ValueRange()); }]>];
  // The parent's verifier checks the yielded types.
  let hasVerifier = 0;
}

#endif // LLMSERVE_IR_LLMSERVEOPS_TD
