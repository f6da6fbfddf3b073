#pragma once
// Constructors of the built-in estimators (one .cpp each); make_estimator() dispatches to them.
#include <memory>

#include "estimate/estimator.h"

namespace colo::estimate {

std::unique_ptr<Estimator> make_oracle_estimator();
std::unique_ptr<Estimator> make_horus_estimator();
std::unique_ptr<Estimator> make_allocsim_estimator();
std::unique_ptr<Estimator> make_auto_estimator();
std::unique_ptr<Estimator> make_trace_estimator();       // estimate/trace/trace_estimator.cpp
std::unique_ptr<Estimator> make_faketensor_estimator();  // estimate/trace/faketensor_estimator.cpp

}  // namespace colo::estimate
