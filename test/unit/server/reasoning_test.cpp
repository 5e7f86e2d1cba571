#include "server/reasoning.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace llmserve {
namespace {

// Reasoning and content of an output pushed in the given pieces.
std::pair<std::string, std::string> split(bool thinking, const std::vector<std::string> &pieces) {
  ReasoningSplitter splitter(thinking);
  std::string reasoning, content;
  for (const std::string &piece : pieces) {
    ReasoningSplitter::Split s = splitter.push(piece);
    reasoning += s.reasoning;
    content += s.content;
  }
  ReasoningSplitter::Split s = splitter.finish();
  return {reasoning + s.reasoning, content + s.content};
}

TEST(Reasoning, ThoughtsBetweenTheMarkersAreReasoning) {
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(split(false, {"<think>\nhm", "m</thi", "nk>\n\nYes."}), P("\nhmm", "\n\nYes."));
  EXPECT_EQ(split(false, {"<", "thi", "nk>a</think>b"}), P("a", "b"));
  EXPECT_EQ(split(false, {"\n<think>a</think>"}), P("a", ""));
  // No opening marker: all content, markers later included.
  EXPECT_EQ(split(false, {"Yes <think>no</think>"}), P("", "Yes <think>no</think>"));
  EXPECT_EQ(split(false, {"<thing>"}), P("", "<thing>"));
  EXPECT_EQ(split(false, {"<thi"}), P("", "<thi")) << "an output that ends early";
  // The prompt opened the block (DeepSeek-R1): thoughts until </think>.
  EXPECT_EQ(split(true, {"so ", "2+2=4", "</think>", "4"}), P("so 2+2=4", "4"));
  EXPECT_EQ(split(true, {"cut short </th"}), P("cut short </th", "")) << "never closed";
}

TEST(Reasoning, PiecesComeOutAsSoonAsTheyAreKnown) {
  ReasoningSplitter splitter(false);
  EXPECT_EQ(splitter.push("<think>").reasoning, "");
  EXPECT_EQ(splitter.push("a</").reasoning, "a");
  ReasoningSplitter::Split s = splitter.push("think>b");
  EXPECT_EQ(s.reasoning, "");
  EXPECT_EQ(s.content, "b");
  EXPECT_EQ(splitter.push("c").content, "c");
}

TEST(Reasoning, TemplatesAndPrompts) {
  EXPECT_TRUE(template_thinks("{{ '<think>\\n' }}{% if '</think>' in content %}"));
  EXPECT_FALSE(template_thinks("{{ messages }}"));
  EXPECT_TRUE(prompt_opens_thinking("<|Assistant|><think>\n"));
  EXPECT_FALSE(prompt_opens_thinking("<think>\n\n</think>\n\n")) << "thinking switched off";
  EXPECT_FALSE(prompt_opens_thinking("[INST] hi [/INST]"));
}

} // namespace
} // namespace llmserve
