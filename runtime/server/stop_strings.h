// Stop strings matched on generated text as it streams. Text that could be
// the start of a stop string is held back until the next piece decides it, so
// no part of a stop string is ever emitted.
#ifndef LLMSERVE_SERVER_STOP_STRINGS_H
#define LLMSERVE_SERVER_STOP_STRINGS_H

#include <string>
#include <vector>

namespace llmserve {

class StopStrings {
public:
  // Empty strings are ignored.
  explicit StopStrings(std::vector<std::string> stops);

  // Appends `text` and returns what can be emitted now: everything before
  // the earliest stop string once one has appeared (then stopped() is true
  // and later calls return ""), else everything but the longest tail that
  // is a prefix of some stop string.
  std::string push(const std::string &text);
  // The held-back tail, at the end of generation ("" once stopped).
  std::string flush();
  bool stopped() const { return stopped_; }

private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

} // namespace llmserve

#endif // LLMSERVE_SERVER_STOP_STRINGS_H
