// tokenizer.json -> TokenizerSpec. Each section of the file has one function;
// each refuses, by name, the types and fields the encoder does not implement.
#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "core/io/json.h"
#include "core/text/json_fields.h"
#include "core/text/tokenizer_spec.h"
#include "kernels/error.h"

namespace fp8rl::text {
namespace {

using VocabMap = std::unordered_map<std::string, uint32_t>;

std::string type_of(const JsonField& section) { return section.at("type").string(); }

Normalization parse_normalizer(const JsonField& field) {
  if (field.is_null()) return Normalization::none;
  const std::string type = type_of(field);
  if (type == "NFC") return Normalization::nfc;
  if (type == "Sequence") {
    const JsonField steps = field.at("normalizers");
    Normalization result = Normalization::none;
    for (size_t i = 0; i < steps.size(); ++i) {
      if (parse_normalizer(steps[i]) == Normalization::nfc) result = Normalization::nfc;  // NFC is idempotent
    }
    return result;
  }
  field.unsupported("normalizer type \"" + type + "\" is not supported (supported: none, NFC, a Sequence of NFC)");
}

SplitBehavior parse_behavior(const JsonField& field) {
  const std::string& name = field.string();
  if (name == "Removed") return SplitBehavior::removed;
  if (name == "Isolated") return SplitBehavior::isolated;
  if (name == "MergedWithPrevious") return SplitBehavior::merged_with_previous;
  if (name == "MergedWithNext") return SplitBehavior::merged_with_next;
  if (name == "Contiguous") return SplitBehavior::contiguous;
  field.corrupt("unknown split behavior \"" + name + "\"");
}

void parse_pre_tokenizer(const JsonField& field, std::vector<PreTokenizerStep>& steps) {
  const std::string type = type_of(field);
  PreTokenizerStep step;
  if (type == "Sequence") {
    const JsonField list = field.at("pretokenizers");
    for (size_t i = 0; i < list.size(); ++i) parse_pre_tokenizer(list[i], steps);
    return;
  }
  if (type == "Split") {
    const JsonField pattern = field.at("pattern");
    if (const io::Json* regex = pattern.find("Regex")) {
      step.pattern = pattern.child(*regex, "Regex").string();
    } else if (const io::Json* literal = pattern.find("String")) {
      step.pattern = pattern.child(*literal, "String").string();
      step.pattern_is_literal = true;
    } else {
      pattern.corrupt("expected {\"Regex\": ...} or {\"String\": ...}");
    }
    step.behavior = parse_behavior(field.at("behavior"));
    step.invert = field.boolean_or("invert", false);
  } else if (type == "ByteLevel") {
    step.kind = PreTokenizerStep::Kind::byte_level;
    step.add_prefix_space = field.boolean_or("add_prefix_space", true);
    step.use_regex = field.boolean_or("use_regex", true);
  } else {
    field.unsupported("pre-tokenizer type \"" + type +
                      "\" is not supported (supported: Split, ByteLevel, a Sequence of them; only byte-level BPE)");
  }
  steps.push_back(std::move(step));
}

std::vector<PreTokenizerStep> parse_pre_tokenizers(const JsonField& field) {
  if (field.is_null()) {
    field.unsupported("no pre_tokenizer: only byte-level BPE (with a ByteLevel pre-tokenizer) is supported");
  }
  std::vector<PreTokenizerStep> steps;
  parse_pre_tokenizer(field, steps);
  const auto byte_levels = std::count_if(steps.begin(), steps.end(), [](const PreTokenizerStep& step) {
    return step.kind == PreTokenizerStep::Kind::byte_level;
  });
  if (byte_levels != 1 || steps.back().kind != PreTokenizerStep::Kind::byte_level) {
    field.unsupported("only byte-level BPE is supported: the pre-tokenizer must end with its one ByteLevel step");
  }
  return steps;
}

// Optional string settings of BPE that byte-level tokenizers leave null or empty.
void refuse_affix(const JsonField& model, std::string_view key) {
  const io::Json* value = model.find(key);
  if (value == nullptr || value->is_null()) return;
  const JsonField field = model.child(*value, key);
  if (!field.string().empty())
    field.unsupported("a non-empty " + std::string(key) + " is not supported (not byte-level BPE)");
}

void parse_vocab(const JsonField& field, TokenizerSpec& spec, VocabMap& vocab) {
  field.expect(io::Json::Type::object);
  std::unordered_set<uint32_t> ids;
  spec.vocab.reserve(field.size());
  vocab.reserve(field.size());
  for (const io::Json::Member& member : field.json().items()) {
    const uint32_t id = field.child(member.second, member.first).token_id();
    if (!ids.insert(id).second)
      field.corrupt("id " + std::to_string(id) + " is given to two tokens (one is \"" + member.first + "\")");
    spec.vocab.emplace_back(member.first, id);
    vocab.emplace(member.first, id);
  }
}

void parse_merges(const JsonField& field, const VocabMap& vocab, TokenizerSpec& spec) {
  const size_t count = field.size();
  spec.merges.reserve(count);
  const auto lookup = [&](const JsonField& merge, const std::string& token) {
    const auto found = vocab.find(token);
    if (found == vocab.end()) merge.corrupt("merge refers to \"" + token + "\", which is not in the vocabulary");
    return found->second;
  };
  for (size_t i = 0; i < count; ++i) {
    const JsonField merge = field[i];
    std::string left, right;
    if (merge.json().is_string()) {  // "a b"
      const std::string& line = merge.string();
      const size_t space = line.find(' ');
      if (space == std::string::npos) merge.corrupt("merge \"" + line + "\" is not two tokens separated by a space");
      left = line.substr(0, space);
      right = line.substr(space + 1);
    } else {  // ["a", "b"]
      merge.expect(io::Json::Type::array);
      if (merge.size() != 2) merge.corrupt("a merge pair must have 2 elements, has " + std::to_string(merge.size()));
      left = merge[0].string();
      right = merge[1].string();
    }
    spec.merges.push_back({lookup(merge, left), lookup(merge, right), lookup(merge, left + right)});
  }
}

void parse_model(const JsonField& model, TokenizerSpec& spec, VocabMap& vocab) {
  model.expect(io::Json::Type::object);
  const io::Json* type = model.find("type");
  if (type != nullptr) {
    const std::string& name = model.child(*type, "type").string();
    if (name != "BPE") model.unsupported("model type \"" + name + "\" is not supported (only byte-level BPE)");
  }
  if (const io::Json* dropout = model.find("dropout"); dropout != nullptr && !dropout->is_null()) {
    const JsonField field = model.child(*dropout, "dropout");
    field.expect(io::Json::Type::number);
    if (dropout->as_double() != 0.0) field.unsupported("BPE dropout is random and not supported");
  }
  refuse_affix(model, "continuing_subword_prefix");
  refuse_affix(model, "end_of_word_suffix");
  if (model.boolean_or("byte_fallback", false)) {
    model.unsupported("byte_fallback (SentencePiece-style BPE) is not supported (only byte-level BPE)");
  }
  spec.fuse_unk = model.boolean_or("fuse_unk", false);
  spec.ignore_merges = model.boolean_or("ignore_merges", false);
  parse_vocab(model.at("vocab"), spec, vocab);
  parse_merges(model.at("merges"), vocab, spec);
  if (const io::Json* unk = model.find("unk_token"); unk != nullptr && !unk->is_null()) {
    const JsonField field = model.child(*unk, "unk_token");
    spec.unk_token = field.string();
    if (vocab.count(spec.unk_token) == 0)
      field.corrupt("unk_token \"" + spec.unk_token + "\" is not in the vocabulary");
    spec.has_unk = true;
  }
}

// The ids tokenizers gives added tokens: the model's id for a token the model
// has, else the next id after the vocabulary and the added tokens so far.
void parse_added_tokens(const JsonField& list, const VocabMap& vocab, TokenizerSpec& spec) {
  if (list.is_null()) return;
  std::unordered_map<std::string, uint32_t> added;
  uint32_t max_added = 0;
  const uint32_t vocab_size = static_cast<uint32_t>(vocab.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const JsonField item = list[i];
    AddedTokenSpec token;
    token.content = item.at("content").string();
    token.single_word = item.boolean_or("single_word", false);
    token.lstrip = item.boolean_or("lstrip", false);
    token.rstrip = item.boolean_or("rstrip", false);
    token.normalized = item.boolean_or("normalized", true);
    token.special = item.boolean_or("special", false);
    const uint32_t file_id = item.at("id").token_id();
    if (token.content.empty()) continue;  // tokenizers ignores empty added tokens
    if (added.count(token.content) != 0) item.corrupt("added token \"" + token.content + "\" is listed twice");
    if (const auto in_model = vocab.find(token.content); in_model != vocab.end()) {
      token.id = in_model->second;
    } else if (added.empty()) {
      token.id = vocab_size;
    } else {
      token.id = max_added >= vocab_size || vocab_size == 0 ? max_added + 1 : vocab_size;
    }
    if (token.id != file_id) {
      item.corrupt("added token \"" + token.content + "\" has id " + std::to_string(file_id) +
                   ", but tokenizers gives it " + std::to_string(token.id));
    }
    max_added = added.empty() ? token.id : std::max(max_added, token.id);
    added.emplace(token.content, token.id);
    spec.added_tokens.push_back(std::move(token));
  }
}

void parse_post_processor(const JsonField& field, TokenizerSpec& spec) {
  if (field.is_null()) return;
  const std::string type = type_of(field);
  if (type == "ByteLevel") return;  // offsets only
  if (type == "Sequence") {
    const JsonField list = field.at("processors");
    for (size_t i = 0; i < list.size(); ++i) parse_post_processor(list[i], spec);
    return;
  }
  if (type != "TemplateProcessing") {
    field.unsupported("post-processor type \"" + type +
                      "\" is not supported (supported: TemplateProcessing, ByteLevel, Sequence)");
  }
  const JsonField specials = field.at("special_tokens");
  const JsonField single = field.at("single");
  std::vector<uint32_t> prefix, suffix;
  bool seen_sequence = false;
  for (size_t i = 0; i < single.size(); ++i) {
    const JsonField item = single[i];
    if (const io::Json* sequence = item.find("Sequence")) {
      const std::string& id = item.child(*sequence, "Sequence").at("id").string();
      if (id != "A" || seen_sequence) item.unsupported("a single-sequence template holds one $A, found $" + id);
      seen_sequence = true;
    } else if (const io::Json* special = item.find("SpecialToken")) {
      const std::string& name = item.child(*special, "SpecialToken").at("id").string();
      const io::Json* entry = specials.find(name);
      if (entry == nullptr) item.corrupt("special token \"" + name + "\" is not in special_tokens");
      const JsonField ids = specials.child(*entry, name).at("ids");
      for (size_t k = 0; k < ids.size(); ++k) (seen_sequence ? suffix : prefix).push_back(ids[k].token_id());
    } else {
      item.corrupt("expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
    }
  }
  if (!seen_sequence) single.corrupt("the template has no $A");
  // A later processor wraps what the earlier ones produced.
  prefix.insert(prefix.end(), spec.post_process.prefix.begin(), spec.post_process.prefix.end());
  suffix.insert(suffix.begin(), spec.post_process.suffix.begin(), spec.post_process.suffix.end());
  spec.post_process.prefix = std::move(prefix);
  spec.post_process.suffix = std::move(suffix);
}

bool parse_decoder(const JsonField& field) {
  if (field.is_null()) return false;
  const std::string type = type_of(field);
  if (type == "ByteLevel") return true;
  if (type == "Sequence") {
    const JsonField list = field.at("decoders");
    if (list.size() == 1 && parse_decoder(list[0])) return true;
  }
  field.unsupported("decoder type \"" + type + "\" is not supported (supported: ByteLevel)");
}

}  // namespace

TokenizerSpec parse_tokenizer_json(std::string_view text, const std::string& what) {
  io::JsonLimits limits;
  limits.max_bytes = size_t{256} << 20;
  const io::Json document = io::parse_json(text, what, limits);
  const JsonField root(document, what, "");
  root.expect(io::Json::Type::object);
  TokenizerSpec spec;
  VocabMap vocab;
  parse_model(root.at("model"), spec, vocab);  // first: the model's type is the most telling refusal
  if (const io::Json* normalizer = root.find("normalizer"))
    spec.normalization = parse_normalizer(root.child(*normalizer, "normalizer"));
  spec.pre_tokenizer = parse_pre_tokenizers(root.at("pre_tokenizer"));
  if (const io::Json* added = root.find("added_tokens"))
    parse_added_tokens(root.child(*added, "added_tokens"), vocab, spec);
  if (const io::Json* post = root.find("post_processor"))
    parse_post_processor(root.child(*post, "post_processor"), spec);
  if (const io::Json* decoder = root.find("decoder"))
    spec.byte_level_decoder = parse_decoder(root.child(*decoder, "decoder"));
  else
    spec.byte_level_decoder = false;
  return spec;
}

}  // namespace fp8rl::text
