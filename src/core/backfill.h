#pragma once
// Backfilling behind a waiting main-queue head: later jobs may start where they fit while the
// head waits, a bounded number of times per head, so the head cannot starve (cf. Slurm's
// sched/backfill, whose bf_max_job_test bounds the jobs looked at per pass as `depth` does here).
// The scheduler (scheduler.cpp) applies it; SchedulerState counts the overtakes.
namespace colo {

struct Backfill {
  int max_overtakes = 0;  // jobs that may start ahead of one waiting head; 0 = strict FIFO
  int depth = 200;        // queued jobs looked at behind the head per decision
};

}  // namespace colo
