// Server-sent events as OpenAI streams them: the `data:` payload of each
// event, from bytes that arrive in arbitrary pieces.
#ifndef LLMSERVE_BENCH_SSE_H
#define LLMSERVE_BENCH_SSE_H

#include <string>
#include <string_view>
#include <vector>

namespace llmserve::bench {

class SseParser {
public:
  // Appends bytes and returns the payloads of the events they complete.
  // Several `data:` lines of one event are joined with '\n'; comments and
  // other fields are skipped.
  std::vector<std::string> feed(std::string_view bytes);
  // Bytes of an event not yet completed by a blank line.
  bool has_partial_event() const;

private:
  std::string line_;  // the line being received
  std::string data_;  // the event being received
  bool has_data_ = false;
};

} // namespace llmserve::bench

#endif // LLMSERVE_BENCH_SSE_H
