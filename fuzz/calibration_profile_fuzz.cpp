// GPU calibration profiles (calibration/<gpu>.json, src/estimate/calibration/calibration_profile.cpp):
// read from a directory an administrator may point elsewhere ($COLO_CALIBRATION_DIR). Any bytes
// must end in a UserError or a profile, and a profile that reads must write (to_json) a profile
// that reads back to the same JSON — `colo estimate calibrate` writes profiles that way.
#include <cstdio>
#include <cstdlib>

#include "estimate/calibration/calibration_profile.h"
#include "fuzz_common.h"

namespace {

void parse_calibration_profile(const std::uint8_t* data, std::size_t size) {
  using colo::estimate::CalibrationProfile;
  const std::string once = CalibrationProfile::from_json(std::string(colo::fuzz::as_text(data, size)), "fuzz.json").to_json();
  const std::string twice = CalibrationProfile::from_json(once, "written.json").to_json();
  if (once != twice) {
    std::fprintf(stderr, "colo fuzz [calibration_profile]: a written profile reads back different:\n%s\n---\n%s\n",
                 once.c_str(), twice.c_str());
    std::abort();
  }
}

}  // namespace

COLO_FUZZ_TARGET(calibration_profile) {
  COLO_FUZZ_EXPECT_USER_ERROR("calibration_profile", parse_calibration_profile(data, size));
  return 0;
}
