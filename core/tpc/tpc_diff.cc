#include "core/tpc/tpc_diff.h"

#include <cctype>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/tpc/builder.h"
#include "core/tpc/tpc_summary.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/util/message_differencer.h"

namespace quantd::tpc {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using google::protobuf::util::MessageDifferencer;
using quantd::v1::OperatorsSet;
using quantd::v1::QuantizationConfigOptions;
using quantd::v1::TargetPlatformCapabilities;

std::string Join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : absl::StrCat(prefix, ".", name);
}

std::string ScalarToString(const Message& m, const FieldDescriptor* f,
                           int index) {
  const Reflection* r = m.GetReflection();
  const bool rep = f->is_repeated();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return absl::StrCat(rep ? r->GetRepeatedInt32(m, f, index)
                              : r->GetInt32(m, f));
    case FieldDescriptor::CPPTYPE_INT64:
      return absl::StrCat(rep ? r->GetRepeatedInt64(m, f, index)
                              : r->GetInt64(m, f));
    case FieldDescriptor::CPPTYPE_UINT32:
      return absl::StrCat(rep ? r->GetRepeatedUInt32(m, f, index)
                              : r->GetUInt32(m, f));
    case FieldDescriptor::CPPTYPE_UINT64:
      return absl::StrCat(rep ? r->GetRepeatedUInt64(m, f, index)
                              : r->GetUInt64(m, f));
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return absl::StrCat(rep ? r->GetRepeatedDouble(m, f, index)
                              : r->GetDouble(m, f));
    case FieldDescriptor::CPPTYPE_FLOAT:
      return absl::StrCat(rep ? r->GetRepeatedFloat(m, f, index)
                              : r->GetFloat(m, f));
    case FieldDescriptor::CPPTYPE_BOOL:
      return (rep ? r->GetRepeatedBool(m, f, index) : r->GetBool(m, f))
                 ? "true"
                 : "false";
    case FieldDescriptor::CPPTYPE_ENUM: {
      const int v =
          rep ? r->GetRepeatedEnumValue(m, f, index) : r->GetEnumValue(m, f);
      const auto* value = f->enum_type()->FindValueByNumber(v);
      if (value == nullptr) return absl::StrCat(v);
      // MCT's spelling: SYMMETRIC, not QUANTIZATION_METHOD_SYMMETRIC.
      std::string prefix;
      for (char ch : f->enum_type()->name()) {
        if (std::isupper(static_cast<unsigned char>(ch)) && !prefix.empty()) {
          prefix.push_back('_');
        }
        prefix.push_back(
            static_cast<char>(std::toupper(static_cast<unsigned char>(ch))));
      }
      prefix.push_back('_');
      return absl::StartsWith(value->name(), prefix)
                 ? value->name().substr(prefix.size())
                 : value->name();
    }
    case FieldDescriptor::CPPTYPE_STRING:
      return absl::StrCat(
          "\"", rep ? r->GetRepeatedString(m, f, index) : r->GetString(m, f),
          "\"");
    default:
      return "?";
  }
}

std::string ValueOf(const Message& m, const FieldDescriptor* f) {
  const Reflection* r = m.GetReflection();
  if (f->is_repeated()) {
    std::vector<std::string> items;
    for (int i = 0; i < r->FieldSize(m, f); ++i) {
      items.push_back(ScalarToString(m, f, i));
    }
    return absl::StrCat("[", absl::StrJoin(items, ", "), "]");
  }
  if (f->has_presence() && !r->HasField(m, f)) return "null";
  return ScalarToString(m, f, 0);
}

void DiffInto(const Message& a, const Message& b, const std::string& prefix,
              std::vector<std::string>& out);

void DiffMapField(const Message& a, const Message& b, const FieldDescriptor* f,
                  const std::string& path, std::vector<std::string>& out) {
  // Map entries: key field 1, value field 2; compare by key.
  const Reflection* ra = a.GetReflection();
  const Reflection* rb = b.GetReflection();
  const FieldDescriptor* key = f->message_type()->map_key();
  const FieldDescriptor* value = f->message_type()->map_value();
  // Keys print bare: attr_weights_configs_mapping[kernel_attr].
  const auto key_text = [key](const Message& e) {
    std::string k = ScalarToString(e, key, 0);
    if (k.size() >= 2 && k.front() == '"') k = k.substr(1, k.size() - 2);
    return k;
  };
  std::map<std::string, const Message*> ma, mb;
  for (int i = 0; i < ra->FieldSize(a, f); ++i) {
    const Message& e = ra->GetRepeatedMessage(a, f, i);
    ma[key_text(e)] = &e;
  }
  for (int i = 0; i < rb->FieldSize(b, f); ++i) {
    const Message& e = rb->GetRepeatedMessage(b, f, i);
    mb[key_text(e)] = &e;
  }
  for (const auto& [k, e] : ma) {
    const std::string p = absl::StrCat(path, "[", k, "]");
    auto it = mb.find(k);
    if (it == mb.end()) {
      out.push_back(absl::StrCat(p, ": removed"));
    } else if (value->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      DiffInto(e->GetReflection()->GetMessage(*e, value),
               it->second->GetReflection()->GetMessage(*it->second, value), p,
               out);
    } else if (ValueOf(*e, value) != ValueOf(*it->second, value)) {
      out.push_back(absl::StrCat(p, ": ", ValueOf(*e, value), " -> ",
                                 ValueOf(*it->second, value)));
    }
  }
  for (const auto& [k, e] : mb) {
    if (!ma.count(k)) out.push_back(absl::StrCat(path, "[", k, "]: added"));
  }
}

void DiffInto(const Message& a, const Message& b, const std::string& prefix,
              std::vector<std::string>& out) {
  const auto* d = a.GetDescriptor();
  const Reflection* ra = a.GetReflection();
  const Reflection* rb = b.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    const std::string path = Join(prefix, f->name());
    if (f->is_map()) {
      DiffMapField(a, b, f, path, out);
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (f->is_repeated()) {
        const int na = ra->FieldSize(a, f), nb = rb->FieldSize(b, f);
        if (na != nb) {
          out.push_back(absl::StrCat(path, ": ", na, " -> ", nb, " entries"));
        }
        for (int j = 0; j < std::min(na, nb); ++j) {
          DiffInto(ra->GetRepeatedMessage(a, f, j),
                   rb->GetRepeatedMessage(b, f, j),
                   absl::StrCat(path, "[", j, "]"), out);
        }
      } else {
        const bool ha = ra->HasField(a, f), hb = rb->HasField(b, f);
        if (ha && hb) {
          DiffInto(ra->GetMessage(a, f), rb->GetMessage(b, f), path, out);
        } else if (ha != hb) {
          out.push_back(absl::StrCat(path, ": ", ha ? "set" : "null", " -> ",
                                     hb ? "set" : "null"));
        }
      }
    } else {
      const std::string va = ValueOf(a, f), vb = ValueOf(b, f);
      if (va != vb) out.push_back(absl::StrCat(path, ": ", va, " -> ", vb));
    }
  }
}

int IndexOf(const QuantizationConfigOptions& q) {
  for (int i = 0; i < q.quantization_configurations_size(); ++i) {
    if (MessageDifferencer::Equals(q.quantization_configurations(i),
                                   q.base_config())) {
      return i;
    }
  }
  return -1;
}

// Option-level differences: configuration counts, each configuration by
// index (with its one-line summary when it is new or gone), the base.
std::vector<std::string> QcoDiff(const QuantizationConfigOptions* a,
                                 const QuantizationConfigOptions* b,
                                 const QuantizationConfigOptions& a_default,
                                 const QuantizationConfigOptions& b_default) {
  std::vector<std::string> out;
  if ((a == nullptr) != (b == nullptr)) {
    out.push_back(absl::StrCat("qc_options: ", a ? "own" : "default_qco",
                               " -> ", b ? "own" : "default_qco"));
  }
  const QuantizationConfigOptions& qa = a ? *a : a_default;
  const QuantizationConfigOptions& qb = b ? *b : b_default;
  const int na = qa.quantization_configurations_size();
  const int nb = qb.quantization_configurations_size();
  if (na != nb) {
    out.push_back(absl::StrCat("configurations: ", na, " -> ", nb));
  }
  for (int i = 0; i < std::max(na, nb); ++i) {
    if (i >= na) {
      out.push_back(absl::StrCat(
          "+ [", i, "] ", ConfigSummary(qb.quantization_configurations(i))));
    } else if (i >= nb) {
      out.push_back(absl::StrCat(
          "- [", i, "] ", ConfigSummary(qa.quantization_configurations(i))));
    } else {
      DiffInto(qa.quantization_configurations(i),
               qb.quantization_configurations(i), absl::StrCat("[", i, "]"),
               out);
    }
  }
  if (qa.has_base_config() && qb.has_base_config()) {
    // A base that is one of the configurations is shown by its index; the
    // configuration's own changes are listed above.
    const int ia = IndexOf(qa), ib = IndexOf(qb);
    if (ia >= 0 && ib >= 0) {
      if (ia != ib) {
        out.push_back(absl::StrCat("base_config: [", ia, "] -> [", ib, "]"));
      }
    } else {
      DiffInto(qa.base_config(), qb.base_config(), "base_config", out);
    }
  } else if (qa.has_base_config() != qb.has_base_config()) {
    out.push_back(
        absl::StrCat("base_config: ", qa.has_base_config() ? "set" : "null",
                     " -> ", qb.has_base_config() ? "set" : "null"));
  }
  return out;
}

std::string GroupText(const quantd::v1::FusingGroup& g) {
  if (g.has_operators_set()) return g.operators_set().name();
  std::vector<std::string> names;
  for (const auto& s : g.operator_set_group().operators_set()) {
    names.push_back(s.name());
  }
  return absl::StrCat("[", absl::StrJoin(names, "|"), "]");
}

std::vector<std::string> GroupMembers(const quantd::v1::FusingGroup& g) {
  std::vector<std::string> names;
  if (g.has_operators_set()) {
    names.push_back(g.operators_set().name());
  } else {
    for (const auto& s : g.operator_set_group().operators_set()) {
      names.push_back(s.name());
    }
  }
  return names;
}

std::string PatternText(const quantd::v1::Fusing& f) {
  std::vector<std::string> groups;
  for (const auto& g : f.operator_groups()) groups.push_back(GroupText(g));
  return absl::StrJoin(groups, " -> ");
}

// How pattern b's groups differ from a's: "+X, -Y" per position.
std::string PatternChange(const quantd::v1::Fusing& a,
                          const quantd::v1::Fusing& b) {
  std::vector<std::string> parts;
  const int n = std::max(a.operator_groups_size(), b.operator_groups_size());
  for (int i = 0; i < n; ++i) {
    std::vector<std::string> ma, mb;
    if (i < a.operator_groups_size()) ma = GroupMembers(a.operator_groups(i));
    if (i < b.operator_groups_size()) mb = GroupMembers(b.operator_groups(i));
    std::vector<std::string> change;
    for (const auto& m : mb) {
      if (std::find(ma.begin(), ma.end(), m) == ma.end()) {
        change.push_back("+" + m);
      }
    }
    for (const auto& m : ma) {
      if (std::find(mb.begin(), mb.end(), m) == mb.end()) {
        change.push_back("-" + m);
      }
    }
    if (!change.empty()) {
      parts.push_back(
          absl::StrCat("group ", i + 1, ": ", absl::StrJoin(change, " ")));
    }
  }
  return absl::StrJoin(parts, "; ");
}

}  // namespace

bool TpcDiff::empty() const {
  return metadata.empty() && default_qco.empty() && added_op_sets.empty() &&
         removed_op_sets.empty() && changed_op_sets.empty() && fusing.empty();
}

std::vector<std::string> MessageFieldDiffs(const Message& a, const Message& b,
                                           const std::string& prefix) {
  std::vector<std::string> out;
  DiffInto(a, b, prefix, out);
  return out;
}

TpcDiff DiffTpcs(const TargetPlatformCapabilities& a,
                 const TargetPlatformCapabilities& b) {
  TpcDiff d;
  {
    TargetPlatformCapabilities ma = a, mb = b;
    for (auto* m : {&ma, &mb}) {
      m->clear_default_qco();
      m->clear_operator_set();
      m->clear_fusing_patterns();
      m->clear_version();
    }
    d.metadata = MessageFieldDiffs(ma, mb);
  }
  d.default_qco = QcoDiff(&a.default_qco(), &b.default_qco(), a.default_qco(),
                          b.default_qco());
  std::map<std::string, const OperatorsSet*> sa, sb;
  for (const auto& s : a.operator_set()) sa[s.name()] = &s;
  for (const auto& s : b.operator_set()) sb[s.name()] = &s;
  for (const auto& s : b.operator_set()) {
    if (!sa.count(s.name())) d.added_op_sets.push_back(s.name());
  }
  for (const auto& s : a.operator_set()) {
    if (!sb.count(s.name())) {
      d.removed_op_sets.push_back(s.name());
      continue;
    }
    const OperatorsSet& other = *sb[s.name()];
    std::vector<std::string> lines =
        QcoDiff(s.has_qc_options() ? &s.qc_options() : nullptr,
                other.has_qc_options() ? &other.qc_options() : nullptr,
                a.default_qco(), b.default_qco());
    if (!lines.empty()) d.changed_op_sets.push_back({s.name(), lines});
  }
  // Fusing: same name, else same first position, else added / removed.
  std::vector<bool> b_used(b.fusing_patterns_size(), false);
  for (const auto& fa : a.fusing_patterns()) {
    int match = -1;
    for (int pass = 0; pass < 2 && match < 0; ++pass) {
      for (int j = 0; j < b.fusing_patterns_size(); ++j) {
        const auto& fb = b.fusing_patterns(j);
        if (b_used[j]) continue;
        const bool same = pass == 0
                              ? fa.name() == fb.name()
                              : fa.operator_groups_size() > 0 &&
                                    fb.operator_groups_size() > 0 &&
                                    GroupMembers(fa.operator_groups(0)) ==
                                        GroupMembers(fb.operator_groups(0));
        if (same) {
          match = j;
          break;
        }
      }
    }
    if (match < 0) {
      d.fusing.push_back("- " + PatternText(fa));
      continue;
    }
    b_used[match] = true;
    const auto& fb = b.fusing_patterns(match);
    const std::string change = PatternChange(fa, fb);
    if (!change.empty()) {
      d.fusing.push_back(absl::StrCat("~ ", PatternText(fa), "\n      ", change,
                                      "\n      now: ", PatternText(fb)));
    }
    if (fa.has_fuse_op_quantization_config() ||
        fb.has_fuse_op_quantization_config()) {
      for (const auto& line :
           MessageFieldDiffs(fa.has_fuse_op_quantization_config()
                                 ? fa.fuse_op_quantization_config()
                                 : quantd::v1::OpQuantizationConfig(),
                             fb.has_fuse_op_quantization_config()
                                 ? fb.fuse_op_quantization_config()
                                 : quantd::v1::OpQuantizationConfig(),
                             "fuse_op_quantization_config")) {
        d.fusing.push_back(absl::StrCat("~ ", PatternText(fb), ": ", line));
      }
    }
  }
  for (int j = 0; j < b.fusing_patterns_size(); ++j) {
    if (!b_used[j])
      d.fusing.push_back("+ " + PatternText(b.fusing_patterns(j)));
  }
  return d;
}

std::string RenderTpcDiff(const TpcDiff& d, const std::string& a_label,
                          const std::string& b_label,
                          const TargetPlatformCapabilities& a,
                          const TargetPlatformCapabilities& b) {
  std::string out = absl::StrCat("--- ", a_label, "\n+++ ", b_label, "\n");
  if (d.empty()) {
    absl::StrAppend(&out, "no differences\n");
    return out;
  }
  if (!d.metadata.empty()) {
    absl::StrAppend(&out, "\nmetadata:\n");
    for (const auto& l : d.metadata) absl::StrAppend(&out, "  ", l, "\n");
  }
  if (!d.default_qco.empty()) {
    absl::StrAppend(&out, "\ndefault_qco:\n");
    for (const auto& l : d.default_qco) absl::StrAppend(&out, "  ", l, "\n");
  }
  absl::StrAppend(&out, "\noperator sets: ", a.operator_set_size(), " -> ",
                  b.operator_set_size(), " (", d.added_op_sets.size(),
                  " added, ", d.removed_op_sets.size(), " removed, ",
                  d.changed_op_sets.size(), " changed)\n");
  std::map<std::string, const OperatorsSet*> sb;
  for (const auto& s : b.operator_set()) sb[s.name()] = &s;
  for (const auto& name : d.added_op_sets) {
    const OperatorsSet& s = *sb[name];
    absl::StrAppend(&out, "  + ", name, "\n");
    const auto& q = s.has_qc_options() ? s.qc_options() : b.default_qco();
    for (const auto& c : q.quantization_configurations()) {
      absl::StrAppend(&out, "      ", ConfigSummary(c), "\n");
    }
  }
  for (const auto& name : d.removed_op_sets) {
    absl::StrAppend(&out, "  - ", name, "\n");
  }
  for (const auto& [name, lines] : d.changed_op_sets) {
    absl::StrAppend(&out, "  ~ ", name, "\n");
    for (const auto& l : lines) absl::StrAppend(&out, "      ", l, "\n");
  }
  if (!d.fusing.empty()) {
    absl::StrAppend(&out, "\nfusing patterns: ", a.fusing_patterns_size(),
                    " -> ", b.fusing_patterns_size(), "\n");
    for (const auto& l : d.fusing) absl::StrAppend(&out, "  ", l, "\n");
  }
  return out;
}

}  // namespace quantd::tpc
