#pragma once
// The probe's flags, shared by `colo estimate` and `colo submit`:
//   --probe MODEL [--input 3x224x224] [--input-dtype float32] [--num-classes N] [--amp fp16|bf16]
//   [--checkpointing] [--no-set-to-none] [--foreach auto|on|off] [--data-parallel N]
// (--batch and --optimizer are the commands' own flags and are copied in by the caller).
#include <CLI/CLI.hpp>

#include "cli/number_option.h"
#include "core/error.h"
#include "core/limits.h"
#include "estimate/trace/probe_runner.h"

namespace colo::cli {

inline void add_probe_flags(CLI::App* cmd, estimate::ProbeRequest& p) {
  cmd->add_option("--probe", p.model,
                  "estimate from the job's own training step, probed on the CPU: torchvision:NAME or path/to/file.py:function")
                      ->check(non_empty());
  // An empty value is an error, not "not given" (which the probe would answer with the model's default).
  cmd->add_option_function<std::string>("--input", [&p](const std::string& s) {
    if (s.empty()) throw UserError("--input: empty value");
    p.input = s;
  }, "probe: per-sample input shape, e.g. 3x224x224 (default: the model's)");
  cmd->add_option_function<std::string>("--input-dtype", [&p](const std::string& s) {
    if (s.empty()) throw UserError("--input-dtype: empty value");
    p.dtype = s;
  }, "probe: input dtype (float32, float16, bfloat16, float64, int64, int32)");
  add_int_flag(cmd, "--num-classes", p.num_classes, 1, 1ll << 31, "probe: classes of a torchvision model", false);
  cmd->add_option("--amp", p.amp, "probe: automatic mixed precision: none, fp16 (with GradScaler) or bf16")
      ->capture_default_str()
      ->check(non_empty());
  cmd->add_flag("--checkpointing", p.checkpointing, "probe: gradient checkpointing of each top-level child module");
  cmd->add_flag("--no-set-to-none{false}", p.set_to_none, "probe: zero_grad(set_to_none=False), gradients stay allocated");
  add_int_flag(cmd, "--data-parallel", p.data_parallel, 1, 256,
               "probe: torch.nn.DataParallel over N GPUs; the estimate is GPU 0's (it also gathers the outputs)", false);
  cmd->add_option("--foreach", p.foreach, "probe: optimizer implementation: auto (PyTorch 2's choice on CUDA: foreach), on, off")
      ->capture_default_str()->check(non_empty());
}

// The probe's own flags describe a --probe MODEL run. Given with neither --probe nor a probed script
// (whose own checks say which of them a script decides itself) they are an error, not silently
// ignored. `data_parallel_ok`: --data-parallel means something here too.
inline void check_probe_only_flags(const estimate::ProbeRequest& p, bool data_parallel_ok) {
  // --num-classes builds a torchvision network; a model file's function builds its own head.
  if (!p.model.empty() && p.model.rfind("torchvision:", 0) != 0 && p.num_classes != estimate::ProbeRequest{}.num_classes)
    throw UserError("--num-classes goes with --probe torchvision:NAME (a model file's function builds its own head)");
  if (!p.model.empty()) return;
  const estimate::ProbeRequest d;
  const char* flag = !p.input.empty()                   ? "--input"
                     : !p.dtype.empty()                 ? "--input-dtype"
                     : p.num_classes != d.num_classes   ? "--num-classes"
                     : p.amp != d.amp                   ? "--amp"
                     : p.checkpointing                  ? "--checkpointing"
                     : p.set_to_none != d.set_to_none   ? "--no-set-to-none"
                     : p.foreach != d.foreach           ? "--foreach"
                     : !data_parallel_ok && p.data_parallel != d.data_parallel ? "--data-parallel"
                                                                               : nullptr;
  if (flag) throw UserError(std::string(flag) + " goes with --probe MODEL (it describes the probed training step)");
}

}  // namespace colo::cli
