//===- Config.cpp - A Hugging Face config.json, read with errors ----------===//

#include "compiler/Import/Config.h"

#include "llvm/Support/MemoryBuffer.h"

using namespace mlir;
using namespace mlir::llmserve;
namespace json = llvm::json;

llvm::Error mlir::llmserve::makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Expected<json::Value> mlir::llmserve::readJson(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return makeError(path + ": " + buffer.getError().message());
  auto value = json::parse((*buffer)->getBuffer());
  if (!value)
    return makeError(path + ": invalid JSON: " + llvm::toString(value.takeError()));
  return value;
}

bool Config::has(llvm::StringRef key) const {
  const json::Value *v = object.get(key);
  return v && v->kind() != json::Value::Null;
}

llvm::Expected<int64_t> Config::integer(llvm::StringRef key) const {
  if (std::optional<int64_t> v = object.getInteger(key))
    return *v;
  return error("missing or non-integer \"" + key + "\"");
}

llvm::Expected<int64_t> Config::integer(llvm::StringRef key, int64_t fallback) const {
  if (!has(key))
    return fallback;
  return integer(key);
}

llvm::Expected<double> Config::number(llvm::StringRef key, double fallback) const {
  if (!has(key))
    return fallback;
  if (std::optional<double> d = object.get(key)->getAsNumber())
    return *d;
  return error("\"" + key + "\" must be a number");
}

bool Config::boolean(llvm::StringRef key, bool fallback) const {
  return object.getBoolean(key).value_or(fallback);
}

std::string Config::string(llvm::StringRef key, llvm::StringRef fallback) const {
  return object.getString(key).value_or(fallback).str();
}

const json::Object *Config::nested(llvm::StringRef key) const {
  return object.getObject(key);
}

SmallVector<int64_t> Config::integers(llvm::StringRef key) const {
  SmallVector<int64_t> values;
  if (std::optional<int64_t> v = object.getInteger(key))
    values.push_back(*v);
  else if (const json::Array *a = object.getArray(key))
    for (const json::Value &e : *a)
      if (std::optional<int64_t> v = e.getAsInteger())
        values.push_back(*v);
  return values;
}

SmallVector<std::string> Config::strings(llvm::StringRef key) const {
  SmallVector<std::string> values;
  if (const json::Array *a = object.getArray(key))
    for (const json::Value &e : *a)
      values.push_back(e.getAsString().value_or("").str());
  return values;
}

llvm::Expected<SmallVector<double>> Config::numbers(llvm::StringRef key) const {
  SmallVector<double> values;
  if (!has(key))
    return values;
  const json::Array *a = object.get(key)->getAsArray();
  if (!a)
    return error("\"" + key + "\" must be a list of numbers");
  for (const json::Value &e : *a) {
    std::optional<double> d = e.getAsNumber();
    if (!d)
      return error("\"" + key + "\" must be a list of numbers");
    values.push_back(*d);
  }
  return values;
}

llvm::Error Config::error(const llvm::Twine &message) const {
  return makeError(path + ": " + message);
}
