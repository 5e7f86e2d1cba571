#include "server/generation.h"

namespace llmserve {

Generation::Generation(const GenerateRequest &request, int32_t max_model_len,
                       const Tokenizer &tokenizer, EngineLoop &loop)
    : loop_(loop), tokenizer_(tokenizer), n_(request.n),
      logprobs_(request.params.logprobs >= 0), tokens_as_ids_(request.tokens_as_ids) {
  std::vector<Submission> submissions = request.submissions(max_model_len);
  std::vector<uint64_t> ids = loop.submit(submissions, outputs_);
  for (size_t i = 0; i < ids.size(); ++i) {
    choices_.push_back({ids[i], ChoiceText(tokenizer, submissions[i].prompt, request.stop)});
    if (request.tools && request.tools->choice != ToolUse::Choice::kNone)
      choices_.back().tool_calls.emplace(request.tool_call_format);
    if (request.reasoning)
      choices_.back().reasoning.emplace(request.starts_thinking);
  }
  num_running_ = int32_t(choices_.size());
  for (const auto &prompt : request.prompts)
    prompt_tokens_ += int64_t(prompt.size());
  if (request.echo)
    echo_prompts_ = request.prompts;
}

Generation::~Generation() {
  std::vector<uint64_t> running;
  for (const ChoiceState &c : choices_)
    if (!c.finished)
      running.push_back(c.id);
  loop_.abort(running);
}

std::vector<Generation::Delta> Generation::start() {
  std::vector<Delta> deltas;
  if (echo_prompts_.empty())
    return deltas;
  for (int32_t i = 0; i < num_choices(); ++i)
    deltas.push_back({i, tokenizer_.decode(echo_prompts_[i / n_], true), "", {}});
  return deltas;
}

std::string Generation::token_text(int32_t token) const {
  return tokens_as_ids_ ? "token_id:" + std::to_string(token)
                        : tokenizer_.decode({token}, false);
}

TokenLogprob Generation::logprob_of(ChoiceState &choice,
                                     const RequestOutput &output) const {
  TokenLogprob t;
  t.token = token_text(output.token);
  t.logprob = output.logprob;
  t.text_offset = choice.text_offset;
  choice.text_offset += num_characters(t.token);
  for (const auto &[token, logprob] : output.top_logprobs)
    t.top.emplace_back(token_text(token), logprob);
  return t;
}

std::optional<std::vector<Generation::Delta>>
Generation::next(std::chrono::milliseconds timeout) {
  std::vector<RequestOutput> outputs = outputs_->pop(timeout);
  if (outputs.empty())
    return std::nullopt;
  std::vector<Delta> deltas;
  for (const RequestOutput &o : outputs) {
    int32_t index = 0;
    while (choices_[index].id != o.id)
      ++index;
    ChoiceState &c = choices_[index];
    if (c.finished)
      continue;
    std::string text;
    std::optional<std::vector<TokenLogprob>> logprobs;
    if (logprobs_)
      logprobs.emplace();
    if (o.token >= 0) {
      // Tokens after a stop string are not part of the choice.
      if (logprobs && !c.text.stopped())
        logprobs->push_back(logprob_of(c, o));
      text = c.text.push(o.token);
      // The engine ends the request at its next step; what it samples until
      // then is dropped.
      if (c.text.stopped())
        loop_.finish(c.id);
    }
    std::string finish_reason;
    std::vector<ToolCall> calls;
    const bool finishing = o.finished || c.text.stopped();
    if (finishing)
      text += c.text.finish();
    std::string reasoning;
    if (c.reasoning) {
      ReasoningSplitter::Split split = c.reasoning->push(text);
      if (finishing) {
        ReasoningSplitter::Split rest = c.reasoning->finish();
        split.reasoning += rest.reasoning;
        split.content += rest.content;
      }
      reasoning = std::move(split.reasoning);
      text = std::move(split.content);
    }
    if (c.tool_calls)
      text = c.tool_calls->push(text);
    if (finishing) {
      c.finished = true;
      --num_running_;
      finish_reason = c.text.stopped() ? "stop" : to_string(o.finish_reason);
      if (o.finish_reason == FinishReason::kError && error_.empty())
        error_ = o.error;
      if (c.tool_calls) {
        ParsedOutput rest = c.tool_calls->finish();
        text += rest.content;
        calls = std::move(rest.calls);
        if (!calls.empty() && finish_reason == "stop")
          finish_reason = "tool_calls";
      }
    }
    if (!text.empty() || !reasoning.empty() || !finish_reason.empty() ||
        (logprobs && !logprobs->empty()))
      deltas.push_back({index, std::move(text), std::move(finish_reason), std::move(logprobs),
                        std::move(calls), std::move(reasoning)});
  }
  return deltas;
}

Usage Generation::usage() const {
  Usage u;
  u.prompt_tokens = prompt_tokens_;
  for (const ChoiceState &c : choices_)
    u.completion_tokens += c.text.num_tokens();
  return u;
}

} // namespace llmserve
