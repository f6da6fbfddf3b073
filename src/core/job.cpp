#include "core/job.h"

#include <array>
#include <stdexcept>

#include <fmt/format.h>

namespace colo {

namespace {
constexpr std::array<std::string_view, 9> kJobStateNames = {"queued", "placed",     "running",   "done",      "failed",
                                                    "oom",    "recovering", "cancelled", "estimating"};
}

std::string_view to_string(JobState s) { return kJobStateNames[static_cast<size_t>(s)]; }

std::optional<JobState> job_state_from_string(std::string_view s) {
  for (size_t i = 0; i < kJobStateNames.size(); ++i)
    if (kJobStateNames[i] == s) return static_cast<JobState>(i);
  return std::nullopt;
}

bool is_terminal(JobState s) {
  return s == JobState::Done || s == JobState::Failed || s == JobState::Cancelled;
}

bool can_transition(JobState from, JobState to) {
  using S = JobState;
  if (to == S::Cancelled) return !is_terminal(from) && from != S::Cancelled;
  switch (from) {
    case S::Queued: return to == S::Placed || to == S::Failed;  // failed: rejected by the core
    case S::Placed: return to == S::Running || to == S::Queued || to == S::Recovering;
    // queued: its time slot ended and it checkpointed (core/time_slots.h)
    case S::Running: return to == S::Done || to == S::Failed || to == S::Oom || to == S::Queued;
    case S::Oom: return to == S::Recovering || to == S::Failed;
    case S::Recovering: return to == S::Placed || to == S::Failed;
    case S::Estimating: return to == S::Queued;
    case S::Done:
    case S::Failed:
    case S::Cancelled: return false;
  }
  return false;
}

void transition(Job& job, JobState to) {
  if (!can_transition(job.state, to))
    throw std::logic_error(fmt::format("job {}: illegal state change {} -> {}", job.id,
                                       to_string(job.state), to_string(to)));
  if (to == JobState::Running) ++job.attempts;
  job.state = to;
}

}  // namespace colo
