#pragma once
// The optimizers a training job may use, and how much state each keeps per parameter.
#include <string>
#include <string_view>
#include <vector>

namespace colo::estimate {

enum class Optimizer { SGD, SGDMomentum, Adam, AdamW, Adadelta, Adagrad, RMSprop, Adamax, NAdam, RAdam };

// Accepts "sgd", "sgd-momentum" (also "momentum", "sgd_momentum"), "adam", "adamw", "adadelta",
// "adagrad", "rmsprop", "adamax", "nadam", "radam", case-insensitive. Throws colo::UserError.
Optimizer parse_optimizer(std::string_view s);
std::string_view to_string(Optimizer o);
std::vector<std::string> optimizer_names();

// Number of parameter-sized fp32 state tensors the optimizer allocates lazily at its first step
// (PyTorch's torch.optim): SGD 0, momentum 1, Adam/AdamW 2 (exp_avg, exp_avg_sq), Adadelta 2,
// Adagrad 1, RMSprop 1, Adamax 2, NAdam 2, RAdam 2.
int state_tensors_per_param(Optimizer o);

// Number of parameter-sized temporaries alive at once inside the default (foreach) step on CUDA:
// Adam/AdamW: sqrt(exp_avg_sq) 1; Adadelta: std and delta 2; RMSprop/Adagrad: the sqrt 1;
// Adamax: |grad| 1; NAdam/RAdam 2; SGD (with or without momentum) 0.
int step_temporaries_per_param(Optimizer o);

}  // namespace colo::estimate
