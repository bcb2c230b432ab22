#include "core/graph/graph.h"

#include "absl/strings/str_cat.h"

namespace quantd {

const Attribute* Node::FindAttribute(absl::string_view key) const {
  auto it = attributes.find(std::string(key));
  return it == attributes.end() ? nullptr : &it->second;
}

bool Node::HasAttribute(absl::string_view key) const {
  return FindAttribute(key) != nullptr;
}

int64_t Node::GetInt(absl::string_view key, int64_t default_value) const {
  const Attribute* a = FindAttribute(key);
  return a && a->type == Attribute::Type::kInt ? a->i : default_value;
}

float Node::GetFloat(absl::string_view key, float default_value) const {
  const Attribute* a = FindAttribute(key);
  return a && a->type == Attribute::Type::kFloat ? a->f : default_value;
}

std::string Node::GetString(absl::string_view key,
                            absl::string_view default_value) const {
  const Attribute* a = FindAttribute(key);
  return a && a->type == Attribute::Type::kString ? a->s
                                                  : std::string(default_value);
}

std::vector<int64_t> Node::GetInts(absl::string_view key,
                                   std::vector<int64_t> default_value) const {
  const Attribute* a = FindAttribute(key);
  return a && a->type == Attribute::Type::kInts ? a->ints : default_value;
}

std::vector<float> Node::GetFloats(absl::string_view key,
                                   std::vector<float> default_value) const {
  const Attribute* a = FindAttribute(key);
  return a && a->type == Attribute::Type::kFloats ? a->floats : default_value;
}

const std::string& Node::Input(size_t k) const {
  static const std::string* kEmpty = new std::string();
  return k < inputs.size() ? inputs[k] : *kEmpty;
}

std::string Node::Label() const {
  return absl::StrCat("node '", name, "' (", op_type, ")");
}

const Tensor* Graph::FindInitializer(absl::string_view name) const {
  if (name.empty()) return nullptr;
  auto it = initializers.find(std::string(name));
  return it == initializers.end() ? nullptr : &it->second;
}

int64_t Model::DefaultOpset() const {
  for (const char* domain : {"", "ai.onnx"}) {
    auto it = opset_import.find(domain);
    if (it != opset_import.end()) return it->second;
  }
  return 0;
}

}  // namespace quantd
