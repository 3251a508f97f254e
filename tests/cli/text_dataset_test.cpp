// JSONL datasets and prompt templates: rows, field names, and the errors a
// user sees for a bad file or template.
#include "tools/fp8rl/text_dataset.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tools/fp8rl/cli_error.h"

using fp8rl_cli::LibraryError;
using fp8rl_cli::parse_text_dataset;
using fp8rl_cli::PromptTemplate;
using fp8rl_cli::read_text_dataset;
using fp8rl_cli::TextDatasetOptions;
using fp8rl_cli::UsageError;

namespace {

std::string dataset_error(const std::string& text, const TextDatasetOptions& options = {}) {
  try {
    parse_text_dataset(text, "train.jsonl", options);
  } catch (const LibraryError& error) {
    return error.what();
  }
  return "(no error)";
}

std::string template_error(const std::string& text) {
  try {
    PromptTemplate{text};
  } catch (const UsageError& error) {
    return error.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("prompt_template: the placeholder and escaped braces") {
  CHECK(PromptTemplate().apply("2+3?") == "2+3?");
  CHECK(PromptTemplate("Q: {prompt}\nA:").apply("2+3?") == "Q: 2+3?\nA:");
  CHECK(PromptTemplate("{prompt} / {prompt}").apply("x") == "x / x");
  CHECK(PromptTemplate("{{json}} {prompt} }}{{").apply("x") == "{json} x }{");
  CHECK(PromptTemplate("{{prompt}} {prompt}").apply("x") == "{prompt} x");
  // The prompt's own braces are text, not placeholders.
  CHECK(PromptTemplate("<{prompt}>").apply("{prompt} {{") == "<{prompt} {{>");
}

TEST_CASE("prompt_template: mistakes are usage errors naming the place") {
  CHECK(template_error("Q: {question}") ==
        "prompt template \"Q: {question}\": unknown placeholder {question} at character 4 "
        "(use {prompt} for the prompt, {{ and }} for literal braces)");
  CHECK(template_error("{prompt} {").find("unmatched '{' at character 10") != std::string::npos);
  CHECK(template_error("{prompt} }").find("unmatched '}' at character 10") != std::string::npos);
  CHECK(template_error("no placeholder") == "prompt template \"no placeholder\" has no {prompt} placeholder");
}

TEST_CASE("text_dataset: rows, blank lines, CRLF, a BOM and unknown fields") {
  const std::string text =
      "\xEF\xBB\xBF{\"prompt\": \"2+3?\", \"answer\": \"5\", \"meta\": {\"id\": [1, 2]}}\r\n"
      "\n"
      "   \n"
      "{\"answer\": \"#### 7\", \"prompt\": \"caf\\u00e9 \\ud83d\\ude00\\n\"}\n";
  TextDatasetOptions options;
  options.prompt_template = PromptTemplate("Q: {prompt} A:");
  const auto rows = parse_text_dataset(text, "train.jsonl", options);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].prompt == "Q: 2+3? A:");
  CHECK(rows[0].answer == "5");
  CHECK(rows[0].line == 1);
  CHECK(rows[1].prompt == "Q: caf\xC3\xA9 \xF0\x9F\x98\x80\n A:");
  CHECK(rows[1].answer == "#### 7");
  CHECK(rows[1].line == 4);
}

TEST_CASE("text_dataset: configurable field names") {
  TextDatasetOptions options;
  options.prompt_field = "question";
  options.answer_field = "solution";
  const auto rows = parse_text_dataset(R"({"question": "q", "solution": "s", "prompt": 1})", "x", options);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].prompt == "q");
  CHECK(rows[0].answer == "s");
  CHECK(dataset_error(R"({"prompt": "q", "answer": "a"})", options) == "train.jsonl:1: no field \"question\"");
}

TEST_CASE("text_dataset: errors name the file, the line and the field") {
  const std::string good = "{\"prompt\": \"p\", \"answer\": \"a\"}\n";
  CHECK(dataset_error(good + "{\"prompt\": \"p\"}\n") == "train.jsonl:2: no field \"answer\"");
  CHECK(dataset_error(good + "\n{\"prompt\": 3, \"answer\": \"a\"}") ==
        "train.jsonl:3: field \"prompt\" is a number, not a string");
  CHECK(dataset_error("{\"prompt\": \"p\", \"answer\": null}") ==
        "train.jsonl:1: field \"answer\" is null, not a string");
  CHECK(dataset_error(good + "{\"prompt\": \"p\", \"answer\": \"a\",}") ==
        "train.jsonl:2: invalid JSON: expected a string key at column 31");
  CHECK(dataset_error("[\"p\", \"a\"]") == "train.jsonl:1: expected a JSON object, found an array");
  CHECK(dataset_error("") == "train.jsonl: no rows (the file is empty or blank)");
  CHECK(dataset_error("\n  \n") == "train.jsonl: no rows (the file is empty or blank)");
}

TEST_CASE("text_dataset: reading a file") {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("fp8rl_text_dataset_" + std::to_string(getpid()) + ".jsonl")).string();
  {
    std::ofstream file(path);
    file << "{\"prompt\": \"p\", \"answer\": \"a\"}\n{\"prompt\": \"q\"}\n";
  }
  try {
    read_text_dataset(path);
    FAIL("no error");
  } catch (const LibraryError& error) {
    CHECK(std::string(error.what()) == path + ":2: no field \"answer\"");
  }
  std::remove(path.c_str());
  CHECK_THROWS_WITH_AS(read_text_dataset("/"), "cannot read dataset /: it is a directory", LibraryError);
  CHECK_THROWS_WITH_AS(read_text_dataset("no/such/file.jsonl"),
                       "cannot open dataset no/such/file.jsonl: No such file or directory", LibraryError);
}
