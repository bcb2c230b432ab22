// Einsum: out[o] = sum over unlisted labels of prod_k operand_k[labels_k],
// with implicit output (labels used once, sorted), ellipsis broadcasting and
// repeated labels (diagonals). Reference loop over the full label space: it
// serves shape-level and small attention einsums, not large GEMMs.
#include <map>

#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"
#include "core/util/status_macros.h"

namespace quantd::exec {
namespace {

// Labels are ints: letters as themselves, ellipsis dims as 256 + k (k
// counted from the right-aligned start of the ellipsis block).
struct Parsed {
  std::vector<std::vector<int>> inputs;
  std::vector<int> output;
};

absl::StatusOr<std::vector<int>> ParseTerm(const std::string& term, int rank,
                                           int* ellipsis_rank, bool is_output) {
  std::vector<int> labels;
  int letters = 0;
  for (char c : term)
    letters += std::isalpha(static_cast<unsigned char>(c)) ? 1 : 0;
  for (size_t i = 0; i < term.size(); ++i) {
    const char c = term[i];
    if (c == ' ') continue;
    if (c == '.') {
      if (term.compare(i, 3, "...") != 0)
        return absl::InvalidArgumentError("bad ellipsis");
      int n = is_output ? *ellipsis_rank : rank - letters;
      if (n < 0)
        return absl::InvalidArgumentError("operand rank below its labels");
      if (!is_output) *ellipsis_rank = std::max(*ellipsis_rank, n);
      for (int k = 0; k < n; ++k) labels.push_back(-(n - k));  // fixed below
      i += 2;
      continue;
    }
    if (!std::isalpha(static_cast<unsigned char>(c))) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad character '", std::string(1, c), "'"));
    }
    labels.push_back(c);
  }
  return labels;
}

absl::StatusOr<Parsed> Parse(const std::string& eq,
                             const std::vector<int>& ranks) {
  std::string lhs = eq, rhs;
  const size_t arrow = eq.find("->");
  const bool explicit_out = arrow != std::string::npos;
  if (explicit_out) {
    lhs = eq.substr(0, arrow);
    rhs = eq.substr(arrow + 2);
  }
  std::vector<std::string> terms;
  size_t start = 0;
  for (;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(
        start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ranks.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "equation has ", terms.size(), " operands, node has ", ranks.size()));
  }
  Parsed p;
  int ell = 0;
  for (size_t k = 0; k < terms.size(); ++k) {
    ASSIGN_OR_RETURN(auto labels, ParseTerm(terms[k], ranks[k], &ell, false));
    if (static_cast<int>(labels.size()) != ranks[k]) {
      return absl::InvalidArgumentError(
          absl::StrCat("operand ", k, " has rank ", ranks[k], ", term '",
                       terms[k], "' has ", labels.size(), " labels"));
    }
    p.inputs.push_back(labels);
  }
  // Ellipsis label -(n-k) -> 256 + (ell - (n - k)), right-aligned.
  auto fix = [ell](std::vector<int>& v) {
    for (int& l : v) {
      if (l < 0) l = 256 + ell + l;
    }
  };
  for (auto& v : p.inputs) fix(v);
  if (explicit_out) {
    ASSIGN_OR_RETURN(p.output, ParseTerm(rhs, 0, &ell, true));
    fix(p.output);
  } else {
    for (int k = 0; k < ell; ++k) p.output.push_back(256 + k);
    std::map<int, int> count;
    for (const auto& v : p.inputs) {
      for (int l : v) {
        if (l < 256) ++count[l];
      }
    }
    for (const auto& [l, c] : count) {
      if (c == 1) p.output.push_back(l);
    }
  }
  return p;
}

}  // namespace

void RegisterEinsum(KernelRegistry& r) {
  r.Register(
      "Einsum",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const std::string eq = info.node.GetString("equation", "");
        if (eq.empty()) return info.Error("missing equation");
        return MakeKernel([eq](KernelContext& ctx) -> absl::Status {
          std::vector<const Tensor*> ins;
          std::vector<int> ranks;
          for (int k = 0; k < ctx.num_inputs(); ++k) {
            if (ctx.input(k) == nullptr) return ctx.Error("missing operand");
            ins.push_back(ctx.input(k));
            ranks.push_back(ctx.input(k)->rank());
            if (ins[k]->dtype() != ins[0]->dtype())
              return ctx.Error("operand types differ");
          }
          absl::StatusOr<Parsed> parsed = Parse(eq, ranks);
          if (!parsed.ok()) return ctx.Error(parsed.status().message());
          const Parsed& p = *parsed;
          std::map<int, int64_t> size;
          for (size_t k = 0; k < ins.size(); ++k) {
            for (size_t d = 0; d < p.inputs[k].size(); ++d) {
              const int l = p.inputs[k][d];
              const int64_t n = ins[k]->dim(static_cast<int>(d));
              auto it = size.find(l);
              if (it == size.end() || it->second == 1) {
                size[l] = n;
              } else if (n != 1 && n != it->second) {
                return ctx.Error(absl::StrCat("label sizes differ: ", n, " vs ",
                                              it->second));
              }
            }
          }
          std::vector<int> all = p.output;
          for (const auto& [l, n] : size) {
            if (std::find(all.begin(), all.end(), l) == all.end())
              all.push_back(l);
          }
          std::vector<int64_t> dims, out_shape;
          for (int l : all) {
            if (!size.count(l))
              return ctx.Error("output label not in any operand");
            dims.push_back(size[l]);
          }
          for (size_t i = 0; i < p.output.size(); ++i)
            out_shape.push_back(dims[i]);
          // Strides of every operand per label position in `all` (0 =
          // broadcast).
          std::vector<std::vector<int64_t>> strides(
              ins.size(), std::vector<int64_t>(all.size(), 0));
          for (size_t k = 0; k < ins.size(); ++k) {
            const std::vector<int64_t> st = StridesOf(ins[k]->shape());
            for (size_t d = 0; d < p.inputs[k].size(); ++d) {
              if (ins[k]->dim(static_cast<int>(d)) == 1) continue;
              const size_t pos =
                  std::find(all.begin(), all.end(), p.inputs[k][d]) -
                  all.begin();
              strides[k][pos] += st[d];
            }
          }
          int64_t n_out = NumElements(out_shape), n_red = 1;
          for (size_t i = p.output.size(); i < all.size(); ++i)
            n_red *= dims[i];
          if (n_out < 0 ||
              (n_out > 0 &&
               n_red > (int64_t{1} << 40) / std::max<int64_t>(n_out, 1))) {
            return ctx.Error("einsum is too large for the reference loop");
          }
          return DispatchNumeric(
              ins[0]->dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
                ASSIGN_OR_RETURN(Tensor * y,
                                 ctx.Allocate(0, ins[0]->dtype(), out_shape));
                T* out = y->mutable_data<T>();
                using Acc =
                    std::conditional_t<std::is_floating_point_v<T>, double, T>;
                std::vector<int64_t> idx(all.size());
                for (int64_t o = 0; o < n_out; ++o) {
                  int64_t rem = o;
                  for (int d = static_cast<int>(p.output.size()) - 1; d >= 0;
                       --d) {
                    idx[d] = rem % dims[d];
                    rem /= dims[d];
                  }
                  Acc acc = 0;
                  for (int64_t rr = 0; rr < n_red; ++rr) {
                    int64_t rem2 = rr;
                    for (int d = static_cast<int>(all.size()) - 1;
                         d >= static_cast<int>(p.output.size()); --d) {
                      idx[d] = rem2 % dims[d];
                      rem2 /= dims[d];
                    }
                    Acc prod = 1;
                    for (size_t k = 0; k < ins.size(); ++k) {
                      int64_t off = 0;
                      for (size_t d = 0; d < all.size(); ++d)
                        off += idx[d] * strides[k][d];
                      prod *= static_cast<Acc>(ins[k]->data<T>()[off]);
                    }
                    acc += prod;
                  }
                  out[o] = static_cast<T>(acc);
                }
                return absl::OkStatus();
              });
        });
      });
}

}  // namespace quantd::exec
