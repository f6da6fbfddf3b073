#pragma once
// `colo bench collocation`: the thesis' chapter-4 experiment on real GPUs, so a site can fit the
// simulator's sharing model to its own jobs and GPUs. Each job runs alone on the whole GPU
// (throughput, solo SMACT and busy share), then every pair runs at once under streams or MPS,
// or each job alone on each given MIG instance; slowdowns = solo throughput / throughput there.
// The constants of the sharing model are fitted to them (sim/models/collocation_fit.h), the
// power model to the board's power over an idle window and every run (sim/models/power_fit.h),
// and both written as a complete model file (`colo sim --model FILE`): fitted parameters with the
// measurement as their source, the others as in the base model.
//
//   colo bench collocation --job NAME=COMMAND … --sharing streams|mps|mig [--gpu INDEX]
//        [--mig-instance UUID …] [--smact NAME=VALUE …] [--idle-s 10] [--warmup-s 30] [--measure-s 120]
//        [--base-model FILE] --out MODEL.toml [--measurements FILE.json] [--solo-from FILE.json] [--work-dir DIR]
//        [--fake-gpus SPEC] [--mps-control BINARY]
//
// Jobs report progress through $COLO_BENCH_PROGRESS (cli/bench_job.h).
#include <CLI/CLI.hpp>

namespace colo::cli {

CLI::App* add_bench_collocation(CLI::App* bench);

}  // namespace colo::cli
