#include "server/env_flags.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace quantd::server {

std::string EnvNameForFlag(absl::string_view flag_name) {
  return absl::StrCat("QUANTD_", absl::AsciiStrToUpper(flag_name));
}

std::vector<std::string> FlagsOnCommandLine(
    const std::vector<std::string>& args) {
  std::vector<std::string> names;
  for (const std::string& arg : args) {
    if (arg == "--") break;
    absl::string_view view = arg;
    if (!absl::ConsumePrefix(&view, "-")) continue;  // a positional or a value
    absl::ConsumePrefix(&view, "-");
    const absl::string_view name = view.substr(0, view.find('='));
    if (name.empty()) continue;
    names.emplace_back(name);
    // --nofoo sets the bool flag foo.
    absl::string_view negated = name;
    if (absl::ConsumePrefix(&negated, "no")) names.emplace_back(negated);
  }
  return names;
}

absl::Status ApplyEnvironmentToFlags(const std::vector<std::string>& args,
                                     const EnvLookup& env) {
  const std::vector<std::string> given_list = FlagsOnCommandLine(args);
  const absl::flat_hash_set<std::string> given(given_list.begin(),
                                               given_list.end());
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (given.contains(name)) continue;
    const std::string env_name = EnvNameForFlag(name);
    const char* value = env(env_name.c_str());
    if (value == nullptr) continue;
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "environment variable ", env_name, "=\"", value, "\": ", error));
    }
  }
  return absl::OkStatus();
}

}  // namespace quantd::server
