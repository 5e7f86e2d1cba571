// Which request fields this server acts on, which it accepts as hints that
// change nothing here, and which it refuses: a field of the OpenAI API it
// does not implement, asking for something (tools, best_of > n, ...), is a 400 that names it, and so is a field
// the API does not have, as OpenAI answers it (docs/server.md).
#ifndef LLMSERVE_SERVER_REQUEST_FIELDS_H
#define LLMSERVE_SERVER_REQUEST_FIELDS_H

#include "server/openai_protocol.h"

#include <nlohmann/json.hpp>

#include <cstddef>

namespace llmserve {

// Throws ApiError(400) naming the first field of `body` the endpoint does
// not act on and that is neither a hint nor absent in effect (null, empty,
// or the value that asks for nothing).
void check_request_fields(const nlohmann::json &body, Endpoint endpoint);

// The same inside response_format, its json_schema, and structured_outputs.
void check_structured_output_fields(const nlohmann::json &body);

// The same for message `index` of a chat request: role, content and name,
// and the assistant fields a client echoes back while they are empty.
void check_message_fields(const nlohmann::json &message, size_t index);

} // namespace llmserve

#endif // LLMSERVE_SERVER_REQUEST_FIELDS_H
