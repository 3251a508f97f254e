// Corrupt, malformed and unsupported tokenizer.json files: each a clear
// fp8rl::Error (status and a message naming the field or type), never a crash.
// Agreement with Hugging Face `tokenizers` is tokenizer_oracle.py's job.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/text/byte_level.h"
#include "core/text/tokenizer.h"
#include "kernels/error.h"

namespace {

using fp8rl::Error;
using fp8rl::Status;
using fp8rl::text::Tokenizer;

// A minimal byte-level BPE: the 256 byte symbols, then "ab" (256) and "abc" (257).
std::string vocab_json() {
  std::string out = "{";
  const auto& alphabet = fp8rl::text::byte_level_alphabet();
  for (int byte = 0; byte < 256; ++byte) {
    const std::string symbol = fp8rl::text::byte_level_encode(std::string(1, static_cast<char>(byte)));
    std::string escaped;
    for (const char c : symbol) {
      if (c == '"' || c == '\\') escaped += '\\';
      escaped += c;
    }
    (void)alphabet;
    out += "\"" + escaped + "\":" + std::to_string(byte) + ",";
  }
  return out + "\"ab\":256,\"abc\":257}";
}

struct Parts {
  std::string model_type = "\"BPE\"";
  std::string vocab = vocab_json();
  std::string merges = "[\"a b\", [\"ab\", \"c\"]]";
  std::string model_extra;
  std::string normalizer = "null";
  std::string pre_tokenizer = R"({"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true})";
  std::string post_processor = "null";
  std::string decoder = R"({"type":"ByteLevel"})";
  std::string added_tokens =
      R"([{"id":258,"content":"<s>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}])";

  std::string json() const {
    return R"({"version":"1.0","truncation":null,"padding":null,"added_tokens":)" + added_tokens + R"(,"normalizer":)" +
           normalizer + R"(,"pre_tokenizer":)" + pre_tokenizer + R"(,"post_processor":)" + post_processor +
           R"(,"decoder":)" + decoder + R"(,"model":{"type":)" + model_type + model_extra + R"(,"vocab":)" + vocab +
           R"(,"merges":)" + merges + "}}";
  }
};

void check_error(const std::string& json, Status status, const std::vector<std::string>& fragments) {
  try {
    (void)Tokenizer::from_json(json, "tokenizer.json");
    FAIL("expected an error mentioning " << fragments.front());
  } catch (const Error& error) {
    CHECK(error.status() == status);
    const std::string message = error.what();
    for (const std::string& fragment : fragments) {
      CHECK_MESSAGE(message.find(fragment) != std::string::npos, "'" << message << "' lacks '" << fragment << "'");
    }
  }
}

}  // namespace

TEST_CASE("a minimal byte-level BPE encodes, decodes and repairs invalid UTF-8") {
  const Tokenizer tokenizer = Tokenizer::from_json(Parts{}.json());
  CHECK(tokenizer.encode("abc", false) == std::vector<int32_t>{257});
  CHECK(tokenizer.encode("<s>ab<s>", true) == std::vector<int32_t>{258, 256, 258});
  CHECK(tokenizer.encode("", true).empty());
  // Invalid UTF-8 encodes as its Python-style repair: one U+FFFD per maximal subpart.
  CHECK(tokenizer.encode("\xff\xe2\x82", false) == tokenizer.encode("\xEF\xBF\xBD\xEF\xBF\xBD", false));
  CHECK(tokenizer.encode("\xed\xa0\x80", false) == tokenizer.encode("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD", false));
  const std::vector<int32_t> ids = {258, 257, 0xE2, 999};  // a lone lead byte and an unknown id
  CHECK(tokenizer.decode(ids.data(), ids.size(), false) == "<s>abc\xEF\xBF\xBD");
  CHECK(tokenizer.decode(ids.data(), ids.size(), true) == "abc\xEF\xBF\xBD");
  const int32_t negative = -1;
  CHECK_THROWS_AS(tokenizer.decode(&negative, 1, false), Error);
  CHECK(tokenizer.token_to_id("<s>") == 258);
  CHECK(tokenizer.token_to_id("nope") == -1);
}

TEST_CASE("unsupported tokenizer types are refused by name") {
  Parts wordpiece;
  wordpiece.model_type = "\"WordPiece\"";
  check_error(wordpiece.json(), Status::unsupported, {"model", "WordPiece"});
  Parts unigram;
  unigram.model_type = "\"Unigram\"";
  check_error(unigram.json(), Status::unsupported, {"Unigram"});
  Parts fallback;
  fallback.model_extra = R"(,"byte_fallback":true)";
  check_error(fallback.json(), Status::unsupported, {"byte_fallback"});
  Parts dropout;
  dropout.model_extra = R"(,"dropout":0.1)";
  check_error(dropout.json(), Status::unsupported, {"dropout"});
  Parts prefix;
  prefix.model_extra = R"(,"continuing_subword_prefix":"##")";
  check_error(prefix.json(), Status::unsupported, {"continuing_subword_prefix"});
  Parts metaspace;
  metaspace.pre_tokenizer = R"({"type":"Metaspace","replacement":"_","prepend_scheme":"always"})";
  check_error(metaspace.json(), Status::unsupported, {"pre_tokenizer", "Metaspace"});
  Parts no_byte_level;
  no_byte_level.pre_tokenizer = R"({"type":"Split","pattern":{"Regex":"\\s+"},"behavior":"Isolated","invert":false})";
  check_error(no_byte_level.json(), Status::unsupported, {"ByteLevel"});
  Parts missing_pre;
  missing_pre.pre_tokenizer = "null";
  check_error(missing_pre.json(), Status::unsupported, {"pre_tokenizer"});
  Parts nfkc;
  nfkc.normalizer = R"({"type":"NFKC"})";
  check_error(nfkc.json(), Status::unsupported, {"normalizer", "NFKC"});
  Parts roberta;
  roberta.post_processor = R"({"type":"RobertaProcessing","sep":["</s>",2],"cls":["<s>",0]})";
  check_error(roberta.json(), Status::unsupported, {"RobertaProcessing"});
  Parts wordpiece_decoder;
  wordpiece_decoder.decoder = R"({"type":"WordPiece","prefix":"##","cleanup":true})";
  check_error(wordpiece_decoder.json(), Status::unsupported, {"decoder", "WordPiece"});
}

TEST_CASE("corrupt tokenizer.json files give clear errors") {
  const std::string good = Parts{}.json();
  check_error(good.substr(0, good.size() / 2), Status::corrupt_data, {"tokenizer.json"});
  check_error("[]", Status::corrupt_data, {"expected object"});
  check_error(R"({"pre_tokenizer":null})", Status::corrupt_data, {"missing field \"model\""});
  Parts unknown_merge;
  unknown_merge.merges = R"(["a b", "zz c"])";
  check_error(unknown_merge.json(), Status::corrupt_data, {"model.merges[1]", "\"zz\"", "not in the vocabulary"});
  Parts merge_result;
  merge_result.merges = R"(["b c"])";
  check_error(merge_result.json(), Status::corrupt_data, {"\"bc\"", "not in the vocabulary"});
  Parts one_token;
  one_token.merges = R"(["ab"])";
  check_error(one_token.json(), Status::corrupt_data, {"model.merges[0]", "space"});
  Parts triple;
  triple.merges = R"([["a","b","c"]])";
  check_error(triple.json(), Status::corrupt_data, {"model.merges[0]", "2 elements"});
  Parts number_merge;
  number_merge.merges = "[7]";
  check_error(number_merge.json(), Status::corrupt_data, {"model.merges[0]", "expected array"});
  Parts vocab_array;
  vocab_array.vocab = "[]";
  check_error(vocab_array.json(), Status::corrupt_data, {"model.vocab", "expected object"});
  Parts string_id;
  string_id.vocab = R"({"a":"0"})";
  check_error(string_id.json(), Status::corrupt_data, {"model.vocab.a", "expected number"});
  Parts negative_id;
  negative_id.vocab = R"({"a":-3})";
  check_error(negative_id.json(), Status::corrupt_data, {"model.vocab.a", "outside"});
  Parts shared_id;
  shared_id.vocab = R"({"a":0,"b":0})";
  check_error(shared_id.json(), Status::corrupt_data, {"id 0 is given to two tokens"});
  Parts bad_regex;
  bad_regex.pre_tokenizer =
      R"({"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"(\\p{L}+"},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"use_regex":false}]})";
  check_error(bad_regex.json(), Status::corrupt_data, {"invalid regex", "(\\p{L}+"});
  Parts bad_behavior;
  bad_behavior.pre_tokenizer =
      R"({"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"a"},"behavior":"Sideways","invert":false},{"type":"ByteLevel"}]})";
  check_error(bad_behavior.json(), Status::corrupt_data, {"Sideways"});
  Parts bad_flag;
  bad_flag.pre_tokenizer = R"({"type":"ByteLevel","add_prefix_space":"yes"})";
  check_error(bad_flag.json(), Status::corrupt_data, {"pre_tokenizer.add_prefix_space", "expected boolean"});
  Parts wrong_added_id;
  wrong_added_id.added_tokens = R"([{"id":5,"content":"<s>","special":true,"normalized":false}])";
  check_error(wrong_added_id.json(), Status::corrupt_data, {"\"<s>\"", "id 5", "258"});
  Parts no_content;
  no_content.added_tokens = R"([{"id":258}])";
  check_error(no_content.json(), Status::corrupt_data, {"added_tokens[0]", "content"});
  Parts template_unknown;
  template_unknown.post_processor =
      R"({"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<bos>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}],"pair":[],"special_tokens":{}})";
  check_error(template_unknown.json(), Status::corrupt_data, {"<bos>", "special_tokens"});
  Parts unk;
  unk.model_extra = R"(,"unk_token":"<unk>")";
  check_error(unk.json(), Status::corrupt_data, {"unk_token", "<unk>"});
}

TEST_CASE("a missing model folder is an io_error naming the file") {
  try {
    (void)Tokenizer::load("/nonexistent/model");
    FAIL("expected an io_error");
  } catch (const Error& error) {
    CHECK(error.status() == Status::io_error);
    CHECK(std::string(error.what()).find("/nonexistent/model/tokenizer.json") != std::string::npos);
  }
}
