//===- KernelModule.cpp - The nested module of a module's kernels ---------===//

#include "compiler/Conversion/Common/KernelModule.h"

#include "llvm/Support/xxhash.h"

using namespace mlir;
using namespace mlir::llmserve;

/// The code of `kernel` as text, its name aside.
static std::string kernelCode(Operation *kernel) {
  StringAttr name = SymbolTable::getSymbolName(kernel);
  SymbolTable::setSymbolName(kernel, "kernel");
  std::string text;
  llvm::raw_string_ostream os(text);
  kernel->print(os, OpPrintingFlags().useLocalScope());
  SymbolTable::setSymbolName(kernel, name);
  return text;
}

StringAttr KernelsByCode::intern(Operation *kernel) {
  std::string code = kernelCode(kernel);
  auto &candidates = byHash[llvm::xxh3_64bits(code)];
  for (auto &[known, symbol] : candidates)
    if (known == code) {
      kernel->erase();
      return symbol;
    }
  StringAttr symbol = SymbolTable::getSymbolName(kernel);
  candidates.emplace_back(std::move(code), symbol);
  return symbol;
}
