// A prompt template such as "Question: {prompt}\nAnswer:", applied to each
// dataset prompt before tokenization. "{prompt}" is the only placeholder;
// "{{" and "}}" stand for literal braces, as in Python's str.format, so a
// template written for Python tools reads the same here.
#ifndef FP8RL_TOOLS_PROMPT_TEMPLATE_H
#define FP8RL_TOOLS_PROMPT_TEMPLATE_H

#include <string>
#include <vector>

namespace fp8rl_cli {

class PromptTemplate {
 public:
  // The identity template, "{prompt}".
  PromptTemplate();
  // Throws UsageError for an unknown placeholder, a lone '{' or '}', or a
  // template without "{prompt}" (every prompt would read the same: surely a mistake).
  explicit PromptTemplate(const std::string& text);

  std::string apply(const std::string& prompt) const;

 private:
  // Literal text between placeholders: the prompt goes between consecutive pieces.
  std::vector<std::string> pieces_;
};

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_PROMPT_TEMPLATE_H
