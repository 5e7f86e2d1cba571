//===- Passes.td - llmserve conversion passes --------------*- tablegen -*-===//

#ifndef LLMSERVE_CONVERSION_PASSES
#define LLMSERVE_CONVERSION_PASSES

include "mlir/Pass/PassBase.td"

def LlmserveToCpuKernels : Pass<"llmserve-to-cpu-kernels", "ModuleOp"> {
  let summary = "Outline every llmserve op into a CPU kernel of the bundle ABI";
  let description = [{
    Each compute op of the module's functions becomes one dispatch: a kernel
    `func.func @llmserve_dN_<op>(bindings, push_constants, wg_x, wg_y, wg_z)`
    in the nested module `@kernels`, built from scf loops over memref views of
    the bound buffers (for an elementwise `linalg.generic` from
    llmserve-to-linalg: the generic itself, on tensor views of the
    workgroup's slice of the buffers, left for bufferization), and an `llmserve.dispatch` attribute on the op naming
    the kernel and its grid. The functions themselves stay at the tensor level
    as the host program that `llmc compile` writes into the bundle manifest.

    Bindings are the op's operands then its results (kv_write updates its
    cache operand in place); push constants are the bindings' dynamic sizes
    in binding order; grid expressions name push constant k as `$k`.
  }];
  let options = [
    Option<"avx512", "avx512", "bool", /*default=*/"false",
           "the target CPU has AVX-512F: the register tiles of f32 kernels "
           "on 16-lane vectors may hold 32 of them">,
    Option<"vnni", "vnni", "bool", /*default=*/"false",
           "int8 linears with K a multiple of 64 quantize x to int8 in blocks "
           "of 64 and multiply with AVX-512 VNNI (vpdpbusd)">,
    Option<"bf16", "bf16", "bool", /*default=*/"false",
           "bf16 linears with K a multiple of 32 round x to bf16 and multiply "
           "with AVX-512 BF16 (vdpbf16ps)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::bufferization::BufferizationDialect",
    "::mlir::func::FuncDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def LlmserveToLinalg : Pass<"llmserve-to-linalg", "ModuleOp"> {
  let summary = "Rewrite elementwise llmserve ops as linalg.generic on tensors";
  let description = [{
    f32 silu_mul and gelu become `linalg.generic` ops (every dimension
    parallel, identity indexing maps, the first input as the init, which the
    body does not read) computing the same scalar formulas; ops already
    outlined (with `llmserve.dispatch`) are left alone. llmserve-to-cpu-kernels outlines such generics; their kernels
    are bufferized and vectorized by the transform schedule of the CPU
    pipeline. The NVIDIA pipeline does not run this pass.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect"
  ];
}

def LlmserveToGpuKernels : Pass<"llmserve-to-gpu-kernels", "ModuleOp"> {
  let summary = "Outline every llmserve op into a CUDA kernel of the bundle ABI";
  let description = [{
    Each compute op of the module's functions becomes one dispatch: a kernel
    `gpu.func @llmserve_dN_<op>` in `gpu.module @kernels` (NVVM target
    sm_90), whose parameters are one pointer per bound buffer (a static
    `memref<1xT>`, a bare device pointer once lowered) then one i64 per push
    constant, and an `llmserve.dispatch` attribute on the op naming the
    kernel, its grid, its block size (`block`) and its dynamic shared memory
    (`shared_bytes`). Bindings and push constants follow
    llmserve-to-cpu-kernels. Storage may be f32, f16 or bf16; kernels
    accumulate in f32, and linear runs on tensor cores (mma.sync) for f16
    and bf16.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect", "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect"
  ];
}

#endif
