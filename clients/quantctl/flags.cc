#include "clients/quantctl/flags.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"

namespace quantd::quantctl {
namespace {

constexpr size_t kHelpColumn = 30;

absl::Status Invalid(const std::string& message) {
  return absl::InvalidArgumentError(message);
}

// "--name VALUE" as the help and the docs show it.
std::string FlagText(const Flag& f) {
  std::string text = absl::StrCat("--", f.name);
  if (!f.value_name.empty()) absl::StrAppend(&text, " ", f.value_name);
  return text;
}

std::string FlagHelp(const Flag& f) {
  std::string help = f.help;
  if (f.options.required) absl::StrAppend(&help, " (required)");
  if (!f.options.default_text.empty()) {
    absl::StrAppend(&help, " (default: ", f.options.default_text, ")");
  }
  return help;
}

void AppendRow(const std::string& left, const std::string& help,
               std::string* out) {
  std::string row = absl::StrCat("  ", left);
  row += row.size() + 2 <= kHelpColumn
             ? std::string(kHelpColumn - row.size(), ' ')
             : "  ";
  absl::StrAppend(out, row, help, "\n");
}

std::string MarkdownCell(const std::string& text) {
  return absl::StrReplaceAll(text, {{"|", "\\|"}});
}

}  // namespace

FlagSet::FlagSet(std::string command, std::string synopsis,
                 std::string description)
    : command_(std::move(command)),
      synopsis_(std::move(synopsis)),
      description_(std::move(description)) {}

void FlagSet::Add(Flag flag) { flags_.push_back(std::move(flag)); }

void FlagSet::Positional(std::string name, std::string help, std::string* dst,
                         bool required) {
  positionals_.push_back({std::move(name), std::move(help),
                          [dst](const std::string& v) {
                            *dst = v;
                            return absl::OkStatus();
                          },
                          required});
}

void FlagSet::String(std::string name, std::string value_name, std::string help,
                     std::string* dst, FlagOptions options) {
  Add({std::move(name), std::move(value_name), std::move(help),
       [dst](const std::string& v) {
         *dst = v;
         return absl::OkStatus();
       },
       std::move(options)});
}

void FlagSet::Int(std::string name, std::string help, int lo, int hi, int* dst,
                  FlagOptions options) {
  Add({std::move(name), "N", std::move(help),
       [dst, lo, hi](const std::string& v) {
         int n = 0;
         if (!absl::SimpleAtoi(v, &n) || n < lo || n > hi) {
           return Invalid(absl::StrCat("'", v, "' is not an integer in [", lo,
                                       ", ", hi, "]"));
         }
         *dst = n;
         return absl::OkStatus();
       },
       std::move(options)});
}

void FlagSet::Bool(std::string name, std::string help, bool* dst,
                   FlagOptions options) {
  Add({std::move(name), "", std::move(help),
       [dst](const std::string& v) {
         const std::string lower = absl::AsciiStrToLower(v);
         if (lower == "true" || lower == "1" || lower == "yes") {
           *dst = true;
         } else if (lower == "false" || lower == "0" || lower == "no") {
           *dst = false;
         } else {
           return Invalid(absl::StrCat("'", v, "' is not true or false"));
         }
         return absl::OkStatus();
       },
       std::move(options)});
}

void FlagSet::Duration(std::string name, std::string help, absl::Duration* dst,
                       FlagOptions options) {
  Add({std::move(name), "DURATION", std::move(help),
       [dst](const std::string& v) {
         absl::Duration d;
         int64_t seconds = 0;
         if (absl::SimpleAtoi(v, &seconds)) {
           d = absl::Seconds(seconds);
         } else if (!absl::ParseDuration(v, &d)) {
           return Invalid(absl::StrCat(
               "'", v, "' is not a duration (e.g. 90s, 30m, 1h, or seconds)"));
         }
         if (d <= absl::ZeroDuration()) {
           return Invalid(absl::StrCat("'", v, "' must be > 0"));
         }
         *dst = d;
         return absl::OkStatus();
       },
       std::move(options)});
}

const Flag* FlagSet::Find(const std::string& name) const {
  for (const Flag& f : flags_) {
    if (f.name == name) return &f;
    for (const std::string& alias : f.options.aliases) {
      if (alias == name) return &f;
    }
  }
  return nullptr;
}

absl::Status FlagSet::Parse(const std::vector<std::string>& args,
                            bool* help) const {
  *help = false;
  for (const std::string& a : args) {
    if (a == "-h" || a == "--help") {
      *help = true;
      return absl::OkStatus();
    }
    if (a == "--") break;
  }
  std::vector<const Flag*> seen;
  size_t next_positional = 0;
  bool only_positionals = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (!only_positionals && a == "--") {
      only_positionals = true;
      continue;
    }
    if (only_positionals || a.size() < 2 || a[0] != '-') {
      if (next_positional >= positionals_.size()) {
        return Invalid(absl::StrCat("unexpected argument '", a, "'"));
      }
      const PositionalArg& p = positionals_[next_positional++];
      if (absl::Status st = p.set(a); !st.ok()) {
        return Invalid(absl::StrCat(p.name, ": ", st.message()));
      }
      continue;
    }
    std::string name = a.substr(absl::StartsWith(a, "--") ? 2 : 1);
    std::string value;
    bool has_value = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
      has_value = true;
    }
    const Flag* f = Find(name);
    if (f == nullptr || !absl::StartsWith(a, "--")) {
      return Invalid(absl::StrCat("unknown flag '", a.substr(0, a.find('=')),
                                  "' (see quantctl ", command_, " --help)"));
    }
    if (!has_value && !f->value_name.empty()) {
      if (i + 1 >= args.size()) {
        return Invalid(absl::StrCat("--", f->name, " needs a value (",
                                    f->value_name, ")"));
      }
      value = args[++i];
    } else if (!has_value) {
      value = "true";
    }
    // `--out=` or `--out " "` would otherwise mean the current folder, or
    // (joined as "/NAME") the root: a value is required to say something.
    if (!f->value_name.empty() && !f->options.allow_empty &&
        absl::StripAsciiWhitespace(value).empty()) {
      return Invalid(absl::StrCat("--", f->name, ": empty value (give ",
                                  f->value_name, " or leave the flag out)"));
    }
    // One value per flag: with two, the user cannot tell which one counts.
    if (std::find(seen.begin(), seen.end(), f) != seen.end()) {
      return Invalid(absl::StrCat("--", f->name,
                                  " is given more than once; give it once"));
    }
    if (absl::Status st = f->set(value); !st.ok()) {
      const std::string prefix = absl::StrCat("--", f->name);
      return Invalid(absl::StartsWith(st.message(), prefix)
                         ? std::string(st.message())
                         : absl::StrCat(prefix, ": ", st.message()));
    }
    seen.push_back(f);
  }
  for (size_t p = next_positional; p < positionals_.size(); ++p) {
    if (positionals_[p].required) {
      return Invalid(absl::StrCat(positionals_[p].name, " is required"));
    }
  }
  for (const Flag& f : flags_) {
    if (f.options.required &&
        std::find(seen.begin(), seen.end(), &f) == seen.end()) {
      return Invalid(absl::StrCat("--", f.name, " is required"));
    }
  }
  return absl::OkStatus();
}

int FlagSet::ParseOrExit(const std::vector<std::string>& args) const {
  bool help = false;
  absl::Status st = Parse(args, &help);
  if (help) {
    std::printf("%s", Help().c_str());
    return 0;
  }
  if (!st.ok()) {
    std::fprintf(stderr, "quantctl %s: %s\n%s", command_.c_str(),
                 std::string(st.message()).c_str(), Usage().c_str());
    return 2;
  }
  return -1;
}

std::string FlagSet::Usage() const {
  return absl::StrCat("usage: quantctl ", command_,
                      synopsis_.empty() ? "" : " ", synopsis_,
                      " [flags]  (quantctl ", command_, " --help)\n");
}

std::string FlagSet::Help() const {
  std::string out =
      absl::StrCat("usage: quantctl ", command_, synopsis_.empty() ? "" : " ",
                   synopsis_, " [flags]\n\n", description_, "\n");
  if (!positionals_.empty()) {
    out += "\narguments:\n";
    for (const PositionalArg& p : positionals_) {
      AppendRow(p.name, p.required ? p.help : p.help + " (optional)", &out);
    }
  }
  out += "\nflags:\n";
  for (const Flag& f : flags_) AppendRow(FlagText(f), FlagHelp(f), &out);
  AppendRow("-h, --help", "print this help and exit", &out);
  return out;
}

std::string FlagSet::Markdown() const {
  std::string out = absl::StrCat(
      "### quantctl ", command_, "\n\n```\nquantctl ", command_,
      synopsis_.empty() ? "" : " ", synopsis_, " [flags]\n```\n\n",
      description_, "\n\n| Argument or flag | Meaning |\n|---|---|\n");
  for (const PositionalArg& p : positionals_) {
    absl::StrAppend(&out, "| `", MarkdownCell(p.name), "` | ",
                    MarkdownCell(p.required ? p.help : p.help + " (optional)"),
                    " |\n");
  }
  for (const Flag& f : flags_) {
    absl::StrAppend(&out, "| `", MarkdownCell(FlagText(f)), "` | ",
                    MarkdownCell(FlagHelp(f)), " |\n");
  }
  absl::StrAppend(&out, "| `-h`, `--help` | print this help and exit |\n");
  return out;
}

void PrintWarning(const std::string& message) {
  std::fprintf(stderr, "quantctl: warning: %s\n", message.c_str());
}

}  // namespace quantd::quantctl
