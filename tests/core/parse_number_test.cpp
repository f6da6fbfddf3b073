// The one parsing layer for numbers from outside (core/parse_number.h): ranges are enforced,
// nothing wraps or clamps, and every error names the text and where it came from.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <limits>
#include <string>

#include "core/error.h"
#include "core/parse_number.h"

namespace colo {
namespace {

using ::testing::HasSubstr;

template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ParseInteger, AcceptsOnlyDecimalIntegersInRange) {
  EXPECT_EQ(parse_integer("64", "--batch", 1, 100), 64);
  EXPECT_EQ(parse_integer(" 7 ", "--batch", 1, 100), 7);
  EXPECT_EQ(parse_integer("-5", "x", -10, 10), -5);
  for (const char* bad : {"", " ", "1e3", "64.0", "0x10", "12abc", "abc", "+-1", "nan", "inf"})
    EXPECT_THAT(error_of([&] { parse_integer(bad, "--batch", 1, 1 << 20); }), HasSubstr("--batch: '")) << bad;
}

TEST(ParseInteger, OverflowAndOutOfRangeAreErrorsNamingValueAndFlag) {
  // Finding 2/3: the full int64 range and beyond must never wrap or clamp.
  EXPECT_EQ(error_of([] { parse_integer("9223372036854775807", "--batch", 1, 1 << 20); }),
            "--batch: 9223372036854775807 is out of range (expected 1..1048576)");
  EXPECT_EQ(error_of([] { parse_integer("99999999999999999999", "--batch", 1, 1 << 20); }),
            "--batch: 99999999999999999999 is out of range (expected 1..1048576)");
  // Finding 4: a negative or zero sequence length is an error, not "use the default".
  EXPECT_EQ(error_of([] { parse_integer("-512", "--seq-len", 1, 1 << 20); }),
            "--seq-len: -512 is out of range (expected 1..1048576)");
  EXPECT_THAT(error_of([] { parse_integer("0", "--seq-len", 1, 1 << 20); }), HasSubstr("out of range"));
}

TEST(ParseUnsigned, RejectsNegativeInsteadOfWrapping) {
  EXPECT_EQ(parse_unsigned("18446744073709551615", "--seed"), UINT64_MAX);
  EXPECT_THAT(error_of([] { parse_unsigned("-1", "--seed"); }), HasSubstr("--seed: '-1' is not a non-negative integer"));
  EXPECT_EQ(error_of([] { parse_unsigned("18446744073709551616", "--seed"); }),
            "--seed: 18446744073709551616 is out of range (expected 0..18446744073709551615)");
  EXPECT_EQ(error_of([] { parse_integer("9223372036854775808", "x", INT64_MIN, INT64_MAX); }),
            "x: 9223372036854775808 is out of range (expected -9223372036854775808..9223372036854775807)");
}

TEST(ParseReal, RejectsNanInfGarbageAndOutOfRange) {
  EXPECT_DOUBLE_EQ(parse_real("0.05", "--max-under-rate", 0, 1), 0.05);
  EXPECT_DOUBLE_EQ(parse_real("8e1", "--smact-cap", 1, 100), 80);
  for (const char* bad : {"nan", "NaN", "inf", "-inf", "", "1.5x", "1,5"})
    EXPECT_THAT(error_of([&] { parse_real(bad, "--smact-cap", 1, 100); }), HasSubstr("is not a number")) << bad;
  EXPECT_EQ(error_of([] { parse_real("1e999", "--lr", 0, 10); }), "--lr: 1e999 is out of range (expected 0..10)");
  EXPECT_THAT(error_of([] { parse_real("-0.1", "--duration-jitter", 0, 1); }), HasSubstr("out of range"));
}

TEST(ParseWhole, SpreadsheetIntegersButNoFractionsOrHugeValues) {
  EXPECT_EQ(parse_whole("12288.0", "f.csv:3: column 'm'", 0, 1 << 20), 12288);
  EXPECT_EQ(parse_whole("1.2e4", "f.csv:3: column 'm'", 0, 1 << 20), 12000);
  EXPECT_THAT(error_of([] { parse_whole("2.5", "f.csv:3: column 'm'", 0, 10); }), HasSubstr("is not a whole number"));
  // Finding 5: 9e300 must be an error with file, line and column, not an out-of-range llround.
  EXPECT_EQ(error_of([] { parse_whole("9e300", "f.csv:3: column 'measured_mib'", 0, 1 << 20); }),
            "f.csv:3: column 'measured_mib': 9e300 is out of range (expected 0..1048576)");
}

TEST(ParseMib, UnitsRoundingAndRange) {
  EXPECT_EQ(parse_mib("4096", "--mem", 1, 1 << 20), 4096);
  EXPECT_EQ(parse_mib("10GiB", "--mem", 1, 1 << 20), 10240);
  EXPECT_EQ(parse_mib("1.5 gib", "--mem", 1, 1 << 20), 1536);
  EXPECT_EQ(parse_mib("40GB", "--mem", 1, 1 << 20), 38147);
  EXPECT_EQ(parse_mib("1TiB", "--mem", 1, 1 << 20), 1 << 20);
  EXPECT_EQ(parse_mib("0.5", "--mem", 1, 1 << 20), 1);  // rounds up to whole MiB
  EXPECT_EQ(error_of([] { parse_mib("9223372036854775807", "--margin-mib", 0, 1 << 20); }),
            "--margin-mib: memory '9223372036854775807' is out of range (expected 0..1048576 MiB)");
  EXPECT_THAT(error_of([] { parse_mib("2TiB", "--mem", 1, 1 << 20); }), HasSubstr("out of range"));
  EXPECT_THAT(error_of([] { parse_mib("-5GiB", "--mem", 1, 1 << 20); }), HasSubstr("--mem: memory '-5GiB': expected a number with a unit"));
  EXPECT_THAT(error_of([] { parse_mib("12 parsecs", "--mem", 1, 1 << 20); }), HasSubstr("--mem: memory '12 parsecs': unknown unit 'parsecs'"));
  EXPECT_THAT(error_of([] { parse_mib("GiB", "--mem", 1, 1 << 20); }), HasSubstr("expected a number with a unit"));
  EXPECT_THAT(error_of([] { parse_mib("1e400", "--mem", 1, 1 << 20); }), HasSubstr("--mem: memory '1e400'"));
}

TEST(ParseMib, WithoutAPlaceTheMessageStartsWithMemory) {
  // colod's config and job files prefix their own FILE:LINE.
  EXPECT_EQ(error_of([] { parse_mib("lots", "", 1, 10); }),
            "memory 'lots': expected a number with a unit, e.g. 12GiB, 512MiB or 4096 (MiB)");
}

TEST(ParseSeconds, OptionalSuffixAndRange) {
  EXPECT_DOUBLE_EQ(parse_seconds("30", "--ramp-s", 0, 1e6), 30);
  EXPECT_DOUBLE_EQ(parse_seconds("2.5s", "--ramp-s", 0, 1e6), 2.5);
  EXPECT_THAT(error_of([] { parse_seconds("-1", "--ramp-s", 0, 1e6); }), HasSubstr("out of range"));
  EXPECT_THAT(error_of([] { parse_seconds("s", "--ramp-s", 0, 1e6); }), HasSubstr("is not a duration"));
}

TEST(ParseSeconds, MinutesAndHours) {
  EXPECT_DOUBLE_EQ(parse_seconds("12h", "--slots", 0, 1e6), 12 * 3600);
  EXPECT_DOUBLE_EQ(parse_seconds("10m", "--slots", 0, 1e6), 600);
  EXPECT_DOUBLE_EQ(parse_seconds("1.5 min", "--slots", 0, 1e6), 90);
  EXPECT_THAT(error_of([] { parse_seconds("10ms", "--slots", 0, 1e6); }), HasSubstr("units: s, min or m, h"));
  EXPECT_THAT(error_of([] { parse_seconds("1000h", "--slots", 0, 1e6); }), HasSubstr("out of range"));
  EXPECT_THAT(error_of([] { parse_seconds("1e308h", "--slots", 0, 1e6); }), HasSubstr("out of range"));
  EXPECT_THAT(error_of([] { parse_seconds("h", "--slots", 0, 1e6); }), HasSubstr("is not a duration"));
  // The message quotes what was typed, not what is left once a unit is cut off.
  EXPECT_EQ(error_of([] { parse_seconds("5fortnights", "--ramp-s", 0, 1e6); }),
            "--ramp-s: '5fortnights' is not a duration in seconds (units: s, min or m, h)");
}

TEST(RoundChecked, NeverReachesAnUndefinedConversion) {
  EXPECT_EQ(round_checked(2.4, "x", 0, 10), 2);
  for (double v : {9e300, -9e300, 9223372036854775808.0, std::numeric_limits<double>::infinity(),
                   std::numeric_limits<double>::quiet_NaN(), 11.0})
    EXPECT_THAT(error_of([&] { round_checked(v, "x", 0, 10); }), HasSubstr("out of range")) << v;
  EXPECT_THAT(error_of([] { round_checked(9223372036854775808.0, "x", INT64_MIN, INT64_MAX); }), HasSubstr("out of range"));
}

TEST(LongText, MessageQuotesAtMostFortyCharacters) {
  const std::string huge(100000, '7');
  const std::string msg = error_of([&] { parse_integer(huge, "--batch", 1, 10); });
  EXPECT_LT(msg.size(), 120u);
}

}  // namespace
}  // namespace colo
