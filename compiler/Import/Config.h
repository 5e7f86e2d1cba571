//===- Config.h - A Hugging Face config.json, read with errors -*- C++ -*-===//
//
// Typed access to config.json whose errors name the file and the field, for
// the model families' readers.
//
//===----------------------------------------------------------------------===//

#ifndef LLMSERVE_IMPORT_CONFIG_H
#define LLMSERVE_IMPORT_CONFIG_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <string>

namespace mlir::llmserve {

llvm::Error makeError(const llvm::Twine &message);

/// The JSON value of the file at `path`; errors name the file.
llvm::Expected<llvm::json::Value> readJson(llvm::StringRef path);

class Config {
public:
  Config(const llvm::json::Object &object, std::string path)
      : object(object), path(std::move(path)) {}

  /// Whether `key` is present and not null.
  bool has(llvm::StringRef key) const;
  llvm::Expected<int64_t> integer(llvm::StringRef key) const;
  /// `fallback` when the key is absent or null.
  llvm::Expected<int64_t> integer(llvm::StringRef key, int64_t fallback) const;
  llvm::Expected<double> number(llvm::StringRef key, double fallback) const;
  bool boolean(llvm::StringRef key, bool fallback) const;
  std::string string(llvm::StringRef key, llvm::StringRef fallback) const;
  const llvm::json::Object *nested(llvm::StringRef key) const;
  /// An integer or a list of them (`eos_token_id`).
  SmallVector<int64_t> integers(llvm::StringRef key) const;
  /// A list of strings; empty when absent (non-strings read as "").
  SmallVector<std::string> strings(llvm::StringRef key) const;
  /// A list of numbers; empty when absent or null.
  llvm::Expected<SmallVector<double>> numbers(llvm::StringRef key) const;
  /// "<file>: <message>".
  llvm::Error error(const llvm::Twine &message) const;
  const std::string &file() const { return path; }

private:
  const llvm::json::Object &object;
  std::string path;
};

} // namespace mlir::llmserve

/// Assigns the value of an llvm::Expected to `lhs`, or returns its error.
#define LLMSERVE_TRY_ASSIGN(lhs, expr)                                         \
  do {                                                                         \
    auto llmserveTryAssignValue = (expr);                                      \
    if (!llmserveTryAssignValue)                                               \
      return llmserveTryAssignValue.takeError();                               \
    lhs = *llmserveTryAssignValue;                                             \
  } while (false)

#endif // LLMSERVE_IMPORT_CONFIG_H
