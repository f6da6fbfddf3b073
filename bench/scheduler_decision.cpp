// One Scheduler::decide over a long queue (target ≤ 50 µs with 8 GPUs and 10 000 queued jobs).
//   build/bench_scheduler_decision
#include <benchmark/benchmark.h>

#include <vector>

#include "core/scheduler.h"

namespace {

using namespace colo;

struct World {
  std::vector<Job> queue;
  std::vector<GpuSnapshot> gpus;
  Ledger ledger;
};

// `gpus` GPUs of 40 GiB; `busy_mib` of each already reserved by running jobs; `queued` jobs of
// `need_mib` each waiting.
World make_world(int gpus, int queued, MiB busy_mib, MiB need_mib) {
  World w;
  for (int g = 0; g < gpus; ++g) {
    GpuSnapshot s;
    s.index = g;
    s.uuid = "GPU-" + std::to_string(g);
    s.total_mib = 40960;
    s.used_mib = busy_mib;
    s.smact = 0.3 + 0.05 * (g % 8);
    if (busy_mib > 0) {
      const JobId running = 1000000 + static_cast<JobId>(g);
      s.running.push_back(running);
      w.ledger.reserve(running, g, busy_mib, false, 0);
    }
    w.gpus.push_back(s);
  }
  for (int i = 0; i < queued; ++i) {
    Job j;
    j.id = static_cast<JobId>(i);
    j.gpus = (i % 10 == 0) ? 2 : 1;
    j.need = MemoryNeed::of(need_mib, "oracle");
    j.submit_time = i;
    w.queue.push_back(j);
  }
  return w;
}

void run(benchmark::State& st, const World& w, PolicyKind kind, Backfill backfill = {}) {
  const Scheduler sched(SchedulerConfig(make_policy(kind), {}, backfill));
  SchedulerInput in;
  in.main_queue = w.queue;
  in.gpus = w.gpus;
  in.ledger = &w.ledger;
  in.now = 1e6;
  std::size_t placed = 0;
  for (auto _ : st) {
    SchedulerState s;
    Decision d = sched.decide(in, s);
    placed = d.placements.size();
    benchmark::DoNotOptimize(d);
  }
  st.counters["placed"] = static_cast<double>(placed);
}

// Steady state: every GPU nearly full, the head waits (the common case while jobs queue up).
void BM_Decide_8Gpus_10kQueued_HeadBlocked(benchmark::State& st) {
  static const World w = make_world(8, 10000, 36000, 8000);
  run(st, w, PolicyKind::Magm);
}
// Worst case for one round: empty GPUs, the queue's head jobs keep fitting until memory runs
// out (≈ 80 placements in one call).
void BM_Decide_8Gpus_10kQueued_Filling(benchmark::State& st) {
  static const World w = make_world(8, 10000, 0, 2048);
  run(st, w, static_cast<PolicyKind>(st.range(0)));
}
// One placement among many GPUs (what each simulator decision costs on a 2 000-GPU server).
void BM_Decide_2000Gpus_OnePlacement(benchmark::State& st) {
  static World w = [] {
    World x = make_world(2000, 1, 20000, 8000);
    return x;
  }();
  run(st, w, PolicyKind::Magm);
}

// Backfilling on (issue 14: ≤ 50 µs). Arg: jobs looked at behind the waiting head (depth).
// Blocked: every job behind the head also waits (each is looked at and dismissed).
void BM_Decide_8Gpus_10kQueued_HeadBlocked_Backfill(benchmark::State& st) {
  static const World w = make_world(8, 10000, 36000, 8000);
  run(st, w, PolicyKind::Magm, Backfill{1000000, static_cast<int>(st.range(0))});
}
// Filling behind a head that waits: a 2-GPU 30 GiB head on GPUs with 25 GiB free each, then
// 1 GiB jobs that fit; 100 overtakes allowed per head.
void BM_Decide_8Gpus_10kQueued_Backfilling(benchmark::State& st) {
  static const World w = [] {
    World x = make_world(8, 10000, 16000, 1024);
    x.queue[0].need = MemoryNeed::of(30000, "oracle");
    return x;
  }();
  run(st, w, PolicyKind::Magm, Backfill{100, static_cast<int>(st.range(0))});
}

BENCHMARK(BM_Decide_8Gpus_10kQueued_HeadBlocked)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Decide_8Gpus_10kQueued_HeadBlocked_Backfill)->Arg(200)->Arg(10000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Decide_8Gpus_10kQueued_Backfilling)->Arg(200)->Arg(10000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Decide_8Gpus_10kQueued_Filling)
    ->Arg(static_cast<int>(PolicyKind::Magm))
    ->Arg(static_cast<int>(PolicyKind::Lug))
    ->Arg(static_cast<int>(PolicyKind::RoundRobin))
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Decide_2000Gpus_OnePlacement)->Unit(benchmark::kMicrosecond);

}  // namespace
