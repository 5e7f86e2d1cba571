//===- ApplyCpuSchedule.cpp - The CPU transform schedules -----------------===//
//
// The schedule text is compiled into llmc (CpuSchedules.h, generated from
// compiler/Pipeline/schedules/ by CMake), so a bundle compiles the same
// wherever llmc runs.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"

#include "compiler/Pipeline/schedules/CpuSchedules.h"

#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/Parser/Parser.h"

namespace mlir::llmserve {
#define GEN_PASS_DEF_APPLYCPUSCHEDULE
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlir::llmserve

using namespace mlir;

namespace {

struct ApplyCpuSchedulePass
    : public mlir::llmserve::impl::ApplyCpuScheduleBase<ApplyCpuSchedulePass> {
  void runOnOperation() override {
    ParserConfig config(&getContext());
    OwningOpRef<ModuleOp> schedule = parseSourceString<ModuleOp>(
        llmserve::kCpuKernelsSchedule, config, "cpu-kernels.mlir");
    if (!schedule)
      return signalPassFailure();
    Operation *entry = transform::detail::findTransformEntryPoint(
        getOperation(), *schedule);
    if (!entry ||
        failed(transform::applyTransformNamedSequence(
            getOperation(), entry, *schedule, transform::TransformOptions())))
      signalPassFailure();
  }
};

} // namespace
