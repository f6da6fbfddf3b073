#include "estimate/optimizer.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "core/error.h"
#include "common/ascii_lower.h"

namespace colo::estimate {

namespace {
struct Entry {
  Optimizer o;
  std::string_view name;
};
constexpr Entry kNames[] = {
    {Optimizer::SGD, "sgd"},         {Optimizer::SGDMomentum, "sgd-momentum"},
    {Optimizer::Adam, "adam"},       {Optimizer::AdamW, "adamw"},
    {Optimizer::Adadelta, "adadelta"}, {Optimizer::Adagrad, "adagrad"},
    {Optimizer::RMSprop, "rmsprop"}, {Optimizer::Adamax, "adamax"},
    {Optimizer::NAdam, "nadam"},     {Optimizer::RAdam, "radam"},
};
}  // namespace

Optimizer parse_optimizer(std::string_view s) {
  std::string t = ascii_lower(s);
  std::replace(t.begin(), t.end(), '_', '-');
  if (t == "momentum" || t == "sgdm" || t == "sgd-m") return Optimizer::SGDMomentum;
  for (const auto& e : kNames)
    if (e.name == t) return e.o;
  std::string all;
  for (const auto& e : kNames) all += (all.empty() ? "" : ", ") + std::string(e.name);
  throw UserError("unknown optimizer '" + std::string(s) + "' (expected one of: " + all + ")");
}

std::string_view to_string(Optimizer o) {
  for (const auto& e : kNames)
    if (e.o == o) return e.name;
  return "?";
}

std::vector<std::string> optimizer_names() {
  std::vector<std::string> v;
  for (const auto& e : kNames) v.emplace_back(e.name);
  return v;
}

int state_tensors_per_param(Optimizer o) {
  switch (o) {
    case Optimizer::SGD: return 0;
    case Optimizer::SGDMomentum: return 1;   // momentum_buffer
    case Optimizer::Adam:
    case Optimizer::AdamW:
    case Optimizer::Adamax:
    case Optimizer::NAdam:
    case Optimizer::RAdam: return 2;         // exp_avg, exp_avg_sq (exp_inf for Adamax)
    case Optimizer::Adadelta: return 2;      // square_avg, acc_delta
    case Optimizer::Adagrad: return 1;       // sum
    case Optimizer::RMSprop: return 1;       // square_avg
  }
  return 0;
}

int step_temporaries_per_param(Optimizer o) {
  switch (o) {
    case Optimizer::SGD:
    case Optimizer::SGDMomentum: return 0;
    case Optimizer::Adam:
    case Optimizer::AdamW:
    case Optimizer::Adamax:
    case Optimizer::Adagrad:
    case Optimizer::RMSprop: return 1;
    case Optimizer::Adadelta:
    case Optimizer::NAdam:
    case Optimizer::RAdam: return 2;
  }
  return 0;
}

}  // namespace colo::estimate
