// Checked access to tokenizer.json / tokenizer_config.json fields: a missing
// field or a wrong type is an error naming the field.
#ifndef LLMSERVE_TOKENIZER_JSON_FIELDS_H
#define LLMSERVE_TOKENIZER_JSON_FIELDS_H

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>

namespace llmserve {

inline const nlohmann::json &json_field(const nlohmann::json &object,
                                        const char *key, const std::string &where) {
  if (!object.is_object() || !object.contains(key))
    throw std::invalid_argument(where + ": missing field '" + key + "'");
  return object.at(key);
}

inline std::string json_string(const nlohmann::json &object, const char *key,
                               const std::string &where) {
  const auto &v = json_field(object, key, where);
  if (!v.is_string())
    throw std::invalid_argument(where + "." + key + ": expected a string, got " +
                                v.dump());
  return v.get<std::string>();
}

inline bool json_bool(const nlohmann::json &object, const char *key,
                      const std::string &where) {
  const auto &v = json_field(object, key, where);
  if (!v.is_boolean())
    throw std::invalid_argument(where + "." + key + ": expected a boolean, got " +
                                v.dump());
  return v.get<bool>();
}

// A boolean field that may be absent.
inline bool json_bool(const nlohmann::json &object, const char *key,
                      bool fallback, const std::string &where) {
  if (!object.is_object() || !object.contains(key) || object.at(key).is_null())
    return fallback;
  return json_bool(object, key, where);
}

} // namespace llmserve

#endif
