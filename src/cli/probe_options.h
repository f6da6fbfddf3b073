#pragma once
// The probe's flags, shared by `colo estimate` and `colo submit`:
//   --probe MODEL [--input 3x224x224] [--input-dtype float32] [--num-classes N] [--amp fp16|bf16]
//   [--checkpointing] [--no-set-to-none] [--foreach auto|on|off] [--data-parallel N]
// (--batch and --optimizer are the commands' own flags and are copied in by the caller).
#include <CLI/CLI.hpp>

#include "cli/number_option.h"
#include "core/limits.h"
#include "estimate/trace/probe_runner.h"

namespace colo::cli {

inline void add_probe_flags(CLI::App* cmd, estimate::ProbeRequest& p) {
  cmd->add_option("--probe", p.model,
                  "estimate from the job's own training step, probed on the CPU: torchvision:NAME or path/to/file.py:function");
  cmd->add_option("--input", p.input, "probe: per-sample input shape, e.g. 3x224x224 (default: the model's)");
  cmd->add_option("--input-dtype", p.dtype, "probe: input dtype (float32, float16, bfloat16, float64, int64, int32)");
  add_int_flag(cmd, "--num-classes", p.num_classes, 1, 1ll << 31, "probe: classes of a torchvision model", false);
  cmd->add_option("--amp", p.amp, "probe: automatic mixed precision: none, fp16 (with GradScaler) or bf16")->capture_default_str();
  cmd->add_flag("--checkpointing", p.checkpointing, "probe: gradient checkpointing of each top-level child module");
  cmd->add_flag("--no-set-to-none{false}", p.set_to_none, "probe: zero_grad(set_to_none=False), gradients stay allocated");
  add_int_flag(cmd, "--data-parallel", p.data_parallel, 1, 256,
               "probe: torch.nn.DataParallel over N GPUs; the estimate is GPU 0's (it also gathers the outputs)", false);
  cmd->add_option("--foreach", p.foreach, "probe: optimizer implementation: auto (PyTorch 2's choice on CUDA: foreach), on, off")
      ->capture_default_str();
}

}  // namespace colo::cli
