#include "clients/batch/manifest.h"

#include <filesystem>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "clients/batch/job_options.h"
#include "clients/batch/output_dir.h"
#include "core/datagen/calib_spec.h"
#include "core/io/file_util.h"
#include "core/util/status_macros.h"
#include "nlohmann/json.hpp"

namespace quantd::batch {
namespace {

using nlohmann::json;

constexpr int64_t kMaxManifestBytes = int64_t{64} << 20;
constexpr size_t kMaxJobIdLength = 100;

// Both formats become one JSON object per line; CSV cells stay strings and
// the field readers below accept a typed JSON value or its text.
const std::set<std::string>& TopLevelFields() {
  static const auto* fields = new std::set<std::string>{
      "id", "model", "calib", "samples", "heldout", "eval", "tpc", "options"};
  return *fields;
}
bool IsOptionField(const std::string& key) {
  return FindJobOption(key) != nullptr;
}

// "weights_bits, mp, ..." for messages.
std::string OptionKeys() {
  std::vector<std::string> keys;
  for (const JobOption& o : JobOptions()) keys.push_back(JobOptionKey(o));
  return absl::StrJoin(keys, ", ");
}

class LineParser {
 public:
  LineParser(std::string where, std::string base_dir)
      : where_(std::move(where)), base_dir_(std::move(base_dir)) {}

  absl::Status Error(const std::string& field, const std::string& what) const {
    return absl::InvalidArgumentError(
        absl::StrCat(where_, ": field '", field, "': ", what));
  }

  absl::StatusOr<std::string> String(const json& object,
                                     const std::string& field,
                                     const std::string& path, bool required) {
    if (!object.contains(field) || object[field].is_null() ||
        (object[field].is_string() &&
         object[field].get<std::string>().empty())) {
      if (required) return Error(path, "missing");
      return std::string();
    }
    if (!object[field].is_string()) {
      return Error(
          path, absl::StrCat("expected a string, got ", object[field].dump()));
    }
    return object[field].get<std::string>();
  }

  absl::StatusOr<std::string> Path(const json& object, const std::string& field,
                                   bool required) {
    ASSIGN_OR_RETURN(std::string value, String(object, field, field, required));
    if (value.empty()) return value;
    std::filesystem::path p(value);
    if (p.is_relative()) p = std::filesystem::path(base_dir_) / p;
    return p.lexically_normal().string();
  }

  // A job option's value as the text the option table parses; unset (null
  // or "") gives "".
  absl::StatusOr<std::string> OptionText(const json& v,
                                         const std::string& path) {
    if (v.is_null()) return std::string();
    if (v.is_string()) return v.get<std::string>();
    if (v.is_boolean()) return std::string(v.get<bool>() ? "true" : "false");
    if (v.is_number()) return v.dump();
    return Error(
        path,
        absl::StrCat("expected a string, number or boolean, got ", v.dump()));
  }

  absl::StatusOr<BatchJob> Job(const json& row, int line) {
    if (!row.is_object()) return Error("", "the line is not a JSON object");
    for (const auto& [key, value] : row.items()) {
      if (TopLevelFields().count(key) == 0) {
        return Error(key,
                     "unknown field (id, model, calib, heldout, tpc, "
                     "options)");
      }
    }
    BatchJob job;
    job.line = line;
    ASSIGN_OR_RETURN(job.files.model, Path(row, "model", true));
    const std::string calib_key = row.contains("samples") ? "samples" : "calib";
    ASSIGN_OR_RETURN(job.files.calib, Path(row, calib_key, true));
    if (const auto it = row.find(calib_key);
        it->is_string() &&
        datagen::IsGeneratedCalibSpec(it->get<std::string>())) {
      job.files.calib = it->get<std::string>();  // a spec, not a path
    }
    const std::string eval_key = row.contains("eval") ? "eval" : "heldout";
    ASSIGN_OR_RETURN(job.files.eval, Path(row, eval_key, false));
    ASSIGN_OR_RETURN(std::string tpc, String(row, "tpc", "tpc", true));
    // A TPC file is a path (relative to the manifest); a name stays a name.
    if (IsTpcFile(tpc)) {
      ASSIGN_OR_RETURN(tpc, Path(row, "tpc", true));
    }
    job.files.tpc = tpc;
    ASSIGN_OR_RETURN(job.id, String(row, "id", "id", false));
    if (job.id.empty()) {
      job.id = absl::StrCat(
          std::filesystem::path(job.files.model).stem().string(), "-", line);
    }
    if (!IsValidJobId(job.id)) {
      return Error("id", absl::StrCat("'", job.id,
                                      "' is not a folder name: use 1 to 100 of "
                                      "[A-Za-z0-9_.-], not starting with '.' "
                                      "and not summary.json"));
    }
    json options = json::object();
    if (row.contains("options") && !row["options"].is_null()) {
      if (!row["options"].is_object()) {
        return Error("options", "expected an object");
      }
      options = row["options"];
    }
    for (const auto& [key, value] : options.items()) {
      const std::string path = absl::StrCat("options.", key);
      if (!IsOptionField(key)) {
        return Error(path, absl::StrCat("unknown option (", OptionKeys(), ")"));
      }
      ASSIGN_OR_RETURN(std::string text, OptionText(value, path));
      if (text.empty()) continue;
      absl::Status st = ApplyJobOption(key, text, &job.files);
      if (!st.ok()) return Error(path, std::string(st.message()));
    }
    return job;
  }

 private:
  std::string where_;
  std::string base_dir_;
};

// One CSV record (RFC 4180 quoting; no newlines inside fields).
absl::StatusOr<std::vector<std::string>> SplitCsv(absl::string_view line,
                                                  const std::string& where) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cells.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cells.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  if (quoted) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": unterminated quoted field"));
  }
  for (auto& cell : cells) {
    cell = std::string(absl::StripAsciiWhitespace(cell));
  }
  return cells;
}

bool Skippable(absl::string_view line) {
  line = absl::StripAsciiWhitespace(line);
  return line.empty() || line[0] == '#';
}

}  // namespace

bool IsValidJobId(const std::string& id) {
  if (id.empty() || id.size() > kMaxJobIdLength || id[0] == '.') return false;
  // The batch's own files live next to the job folders (case-insensitive
  // file systems included).
  if (absl::EqualsIgnoreCase(id, kSummaryFile)) return false;
  for (char c : id) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' &&
        c != '-' && c != '.') {
      return false;
    }
  }
  return true;
}

absl::StatusOr<std::vector<BatchJob>> ParseManifest(const std::string& text,
                                                    const std::string& name,
                                                    const std::string& base_dir,
                                                    ManifestFormat format) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  for (auto& line : lines) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
  }
  if (format == ManifestFormat::kAuto) {
    format = ManifestFormat::kCsv;
    for (const auto& line : lines) {
      if (Skippable(line)) continue;
      if (absl::StripLeadingAsciiWhitespace(line)[0] == '{') {
        format = ManifestFormat::kJsonLines;
      }
      break;
    }
  }
  std::vector<BatchJob> jobs;
  std::vector<std::string> header;
  std::map<std::string, int> id_lines;
  for (size_t i = 0; i < lines.size(); ++i) {
    const int line_no = static_cast<int>(i) + 1;
    if (Skippable(lines[i])) continue;
    const std::string where = absl::StrCat(name, ":", line_no);
    json row;
    if (format == ManifestFormat::kJsonLines) {
      row = json::parse(lines[i], nullptr, /*allow_exceptions=*/false);
      if (row.is_discarded()) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": not a JSON object"));
      }
    } else {
      ASSIGN_OR_RETURN(std::vector<std::string> cells,
                       SplitCsv(lines[i], where));
      if (header.empty()) {
        for (const auto& column : cells) {
          if (TopLevelFields().count(column) == 0 && !IsOptionField(column)) {
            return absl::InvalidArgumentError(absl::StrCat(
                where, ": header column '", column,
                "' is not a job field (id, model, calib, heldout, tpc, ",
                OptionKeys(), ")"));
          }
        }
        header = std::move(cells);
        continue;
      }
      if (cells.size() != header.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": ", cells.size(), " columns, the header has ",
                         header.size()));
      }
      row = json::object();
      row["options"] = json::object();
      for (size_t c = 0; c < cells.size(); ++c) {
        if (cells[c].empty()) continue;
        if (IsOptionField(header[c])) {
          row["options"][header[c]] = cells[c];
        } else {
          row[header[c]] = cells[c];
        }
      }
    }
    LineParser parser(where, base_dir);
    ASSIGN_OR_RETURN(BatchJob job, parser.Job(row, line_no));
    auto [it, inserted] = id_lines.emplace(job.id, line_no);
    if (!inserted) {
      return parser.Error(
          "id",
          absl::StrCat("'", job.id, "' is already used on line ", it->second));
    }
    jobs.push_back(std::move(job));
  }
  if (jobs.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": no jobs"));
  }
  return jobs;
}

absl::StatusOr<std::vector<BatchJob>> ReadManifest(const std::string& path,
                                                   ManifestFormat format) {
  ASSIGN_OR_RETURN(std::string text, ReadFileLimited(path, kMaxManifestBytes));
  if (format == ManifestFormat::kAuto) {
    if (absl::EndsWith(path, ".csv")) {
      format = ManifestFormat::kCsv;
    } else if (absl::EndsWith(path, ".jsonl") ||
               absl::EndsWith(path, ".ndjson") ||
               absl::EndsWith(path, ".json")) {
      format = ManifestFormat::kJsonLines;
    }
  }
  const std::string base = std::filesystem::path(path).parent_path().string();
  return ParseManifest(text, path, base.empty() ? "." : base, format);
}

}  // namespace quantd::batch
