#include "text_dataset.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli_error.h"
#include "json_value.h"

namespace fp8rl_cli {

namespace {

bool is_blank(const std::string& line) { return line.find_first_not_of(" \t\r") == std::string::npos; }

std::string field_text(const JsonValue& row, const std::string& field, const std::string& where) {
  const JsonValue* value = row.find(field);
  if (!value) throw LibraryError(where + ": no field \"" + field + "\"");
  if (!value->is_string()) {
    throw LibraryError(where + ": field \"" + field + "\" is " + json_type_name(value->type()) + ", not a string");
  }
  return value->string();
}

JsonValue parse_row(const std::string& line, const std::string& where) {
  JsonValue row = JsonValue::make_null();
  try {
    row = parse_json(line);
  } catch (const JsonSyntaxError& error) {
    throw LibraryError(where + ": invalid JSON: " + error.what());
  }
  if (!row.is_object()) {
    throw LibraryError(where + ": expected a JSON object, found " + std::string(json_type_name(row.type())));
  }
  return row;
}

}  // namespace

std::vector<TextExample> parse_text_dataset(const std::string& text, const std::string& name,
                                            const TextDatasetOptions& options) {
  std::vector<TextExample> rows;
  std::istringstream lines(text);
  std::string line;
  for (int64_t number = 1; std::getline(lines, line); ++number) {
    if (number == 1 && line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.erase(0, 3);  // a UTF-8 byte-order mark
    if (!line.empty() && line.back() == '\r') line.pop_back();                     // CRLF files
    if (is_blank(line)) continue;
    const std::string where = name + ":" + std::to_string(number);
    const JsonValue row = parse_row(line, where);
    TextExample example;
    example.prompt = options.prompt_template.apply(field_text(row, options.prompt_field, where));
    example.answer = field_text(row, options.answer_field, where);
    example.line = number;
    rows.push_back(std::move(example));
  }
  if (rows.empty()) throw LibraryError(name + ": no rows (the file is empty or blank)");
  return rows;
}

std::vector<TextExample> read_text_dataset(const std::string& path, const TextDatasetOptions& options) {
  // A directory opens like a file and then reads as empty: say what it is instead.
  if (std::filesystem::is_directory(path)) throw LibraryError("cannot read dataset " + path + ": it is a directory");
  std::ifstream file(path, std::ios::binary);
  if (!file) throw LibraryError("cannot open dataset " + path + ": " + std::strerror(errno));
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) throw LibraryError("cannot read dataset " + path + ": " + std::strerror(errno));
  return parse_text_dataset(text.str(), path, options);
}

}  // namespace fp8rl_cli
