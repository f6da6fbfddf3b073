// Keras model.summary() text (src/estimate/parse_keras.cpp).
#include "estimate/graph/parsers.h"
#include "fuzz_common.h"

COLO_FUZZ_TARGET(keras) {
  COLO_FUZZ_EXPECT_USER_ERROR("keras", (void)colo::estimate::parse_keras(colo::fuzz::as_text(data, size), "fuzz.txt"));
  return 0;
}
