// Text datasets for training on a Hugging Face model: a JSONL file, one JSON
// object per line, each with a prompt and a reference answer (the answer is
// what the reward compares a completion with). Other fields are ignored.
//
//   {"prompt": "What is 2+3?", "answer": "5", "source": "gsm8k"}
//
// Blank lines are skipped; line numbers in errors still count them, so they
// match what an editor shows.
#ifndef FP8RL_TOOLS_TEXT_DATASET_H
#define FP8RL_TOOLS_TEXT_DATASET_H

#include <cstdint>
#include <string>
#include <vector>

#include "prompt_template.h"

namespace fp8rl_cli {

struct TextExample {
  std::string prompt;  // the template applied to the row's prompt field
  std::string answer;  // the row's answer field, as written
  int64_t line = 0;    // 1-based line in the file, for messages about this row
};

struct TextDatasetOptions {
  std::string prompt_field = "prompt";
  std::string answer_field = "answer";
  PromptTemplate prompt_template;  // identity unless given
};

// All rows of `path`, in file order. Throws LibraryError naming the file, the
// line and the field for: a file that cannot be read, invalid JSON, a line
// that is not an object, a missing field, a field that is not a string, and a
// file without rows.
std::vector<TextExample> read_text_dataset(const std::string& path, const TextDatasetOptions& options = {});

// The same, from text already in memory; `name` stands for the file in messages.
std::vector<TextExample> parse_text_dataset(const std::string& text, const std::string& name,
                                            const TextDatasetOptions& options = {});

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_TEXT_DATASET_H
