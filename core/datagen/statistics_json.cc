#include "core/datagen/statistics_json.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"

namespace quantd::datagen {

absl::StatusOr<std::map<std::string, ChannelStats>> ParseStatisticsJson(
    const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(
        "statistics: not a JSON object of tensor name -> {mean, std}");
  }
  std::map<std::string, ChannelStats> out;
  for (const auto& [name, v] : j.items()) {
    ChannelStats st;
    for (const char* key : {"mean", "std"}) {
      if (!v.is_object() || !v.contains(key) || !v[key].is_array()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "statistics of '", name, "': '", key, "' must be a list"));
      }
      for (const auto& x : v[key]) {
        if (!x.is_number()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "statistics of '", name, "': '", key, "' holds a non-number"));
        }
        (key[0] == 'm' ? st.mean : st.std).push_back(x.get<float>());
      }
    }
    out[name] = std::move(st);
  }
  return out;
}

}  // namespace quantd::datagen
