//===- LlmserveBase.td - llmserve dialect definition -------*- tablegen -*-===//
//
// The dialect, its type constraints and the base class of its ops.
//
//===----------------------------------------------------------------------===//

#ifndef LLMSERVE_IR_LLMSERVEBASE_TD
#define LLMSERVE_IR_LLMSERVEBASE_TD

include "mlir/IR/OpBase.td"

def Llmserve_Dialect : Dialect {
  let name = "llmserve";
  let cppNamespace = "::mlir::llmserve";
  let summary = "Tensor-level ops of a transformer forward step";
  let description = [{
    The `llmserve` dialect describes the forward pass of a decoder-only
    transformer over one serving *step*: a flattened batch of `T` tokens drawn
    from `S` sequences, where prefill chunks and decode tokens mix freely.
    Shapes are dynamic in `T` and `S`; weights are referenced by checkpoint
    tensor name. The KV cache is paged: `kv_write` scatters new keys and values
    into cache slots and `paged_attention` reads them back through a block
    table.

    Float operands are `f32`, `f16` or `bf16`, one element type per op unless
    an op says otherwise. Step metadata (token ids, positions, slots, block
    tables, lengths) is `i32`.
  }];
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    // Each op .td file registers its ops through its own function, defined
    // next to its generated code, so initialize() adds one call per file.
    void registerAttributes();
    void registerOps();

    // The dialect's discardable attributes (docs/dialect.md, "Attributes").
    /// On the module, from `llmc import`: the model config and the absolute
    /// checkpoint directory; the manifest carries both over.
    static constexpr ::llvm::StringLiteral kModelAttrName = "llmserve.model";
    static constexpr ::llvm::StringLiteral kCheckpointAttrName =
        "llmserve.checkpoint";
    /// On the arguments and results of an entry function: the step-contract
    /// array it is (abi::kStepArguments, abi::kStepResults), and the KV cache
    /// {layer, role} an argument is.
    static constexpr ::llvm::StringLiteral kContractAttrName =
        "llmserve.contract";
    static constexpr ::llvm::StringLiteral kKvCacheAttrName =
        "llmserve.kv_cache";
    /// On each op outlined into a dispatch: its kernel,
    /// {kernel = "dN_op", symbol = "llmserve_dN_op", grid = [x, y, z]} plus
    /// the target's launch fields, or an array of such kernels.
    static constexpr ::llvm::StringLiteral kDispatchAttrName =
        "llmserve.dispatch";
    /// Scratch buffers that all kernels of an op's dispatch bind after its
    /// values: an array of shapes, each an array of size expressions in the
    /// op's push constants (`$k`); f32, sized per step like activations.
    static constexpr ::llvm::StringLiteral kScratchAttrName =
        "llmserve.scratch";
    /// On a weight op whose tensor the kernels read in a packed layout, and
    /// the one layout there is: [N/16][K][16] panels (docs/bundle.md), for
    /// weights of a whole number of panels.
    static constexpr ::llvm::StringLiteral kLayoutAttrName = "llmserve.layout";
    static constexpr ::llvm::StringLiteral kPanelLayout = "panels16";
    /// The int8 values of a quantized [N, K] weight as groups of 8 rows
    /// whose 64-byte blocks interleave: element (n, k) at
    /// [n / 8][k / 64][n % 8][k % 64], for N a multiple of 8 and K of 64
    /// (what the VNNI linear streams). int4 values are two a byte, each
    /// block's 32 bytes holding column j + 8 in the low nibble of byte j
    /// and column j + 32 + 8 in its high one.
    static constexpr ::llvm::StringLiteral kRowBlockLayout = "rows8x64";
    static constexpr int64_t kRowBlockRows = 8;
    static constexpr int64_t kPanelWidth = 16;
  }];
}

// Element types of activations and weights.
def Llmserve_Float : AnyTypeOf<[F32, F16, BF16]>;

def Llmserve_FloatTensor : RankedTensorOf<[F32, F16, BF16]>;
def Llmserve_FloatTensor1D : 1DTensorOf<[F32, F16, BF16]>;
def Llmserve_FloatTensor2D : 2DTensorOf<[F32, F16, BF16]>;
// What a weight op yields: a float tensor, or one array of a quantized one.
def Llmserve_WeightTensor : RankedTensorOf<[F32, F16, BF16, I8, I<4>, F8E4M3FN]>;
// A linear's weight: float, int8 with per-row scales, int4 with scales per
// row and group of 128 columns, or FP8 e4m3 with scales per block of 128 x
// 128.
def Llmserve_LinearWeight : 2DTensorOf<[F32, F16, BF16, I8, I<4>, F8E4M3FN]>;
// A linear's input: float, or FP8 e4m3 codes with scales per row and group of
// 128 columns (llmserve.quantize_fp8).
def Llmserve_LinearInput : 2DTensorOf<[F32, F16, BF16, F8E4M3FN]>;
// A paged KV cache: [num_blocks, block_size, kv_heads, head_dim], of the
// activations' type or of 8-bit floats with a scale per cache tensor.
def Llmserve_KvCache : 4DTensorOf<[F32, F16, BF16, F8E4M3FN]>;

def Llmserve_I32Tensor1D : 1DTensorOf<[I32]>;
def Llmserve_I32Tensor2D : 2DTensorOf<[I32]>;
def Llmserve_I64Tensor1D : 1DTensorOf<[I64]>;
def Llmserve_F32Tensor1D : 1DTensorOf<[F32]>;
def Llmserve_F32Tensor2D : 2DTensorOf<[F32]>;
def Llmserve_F32Tensor : RankedTensorOf<[F32]>;

class Llmserve_Op<string mnemonic, list<Trait> traits = []>
    : Op<Llmserve_Dialect, mnemonic, traits> {
  let hasVerifier = 1;
}

#endif // LLMSERVE_IR_LLMSERVEBASE_TD
