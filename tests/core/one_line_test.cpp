// core/one_line.h: what colo quotes or prints on one line cannot break the line or drive a
// terminal.
#include <gtest/gtest.h>

#include "core/one_line.h"

namespace colo {
namespace {

TEST(OneLine, EscapesC0DelAndC1ControlsKeepsTextAndTabs) {
  EXPECT_EQ(one_line("a\nb\rc"), "a\\nb\\rc");
  EXPECT_EQ(one_line("\x1b[31mred\x7f"), "\\x1b[31mred\\x7f");
  EXPECT_EQ(one_line("csi \xc2\x9b" "31m"), "csi \\u009b31m");  // U+009B, the 8-bit CSI
  EXPECT_EQ(one_line("caf\xc3\xa9 \xc2\xa0 tab\there"), "caf\xc3\xa9 \xc2\xa0 tab\there");  // é, NBSP, tab stay
  EXPECT_EQ(one_line("trailing \xc2"), "trailing \\xc2");
  // Bytes that are not UTF-8 are escaped: the message itself stays valid UTF-8.
  EXPECT_EQ(one_line("bin\xff\xfe ok \xe2\x82\xac"), "bin\\xff\\xfe ok \xe2\x82\xac");  // € stays
  EXPECT_EQ(one_line("\xed\xa0\x80"), "\\xed\\xa0\\x80");                        // a surrogate is not UTF-8
  EXPECT_EQ(one_line("\xc0\xaf"), "\\xc0\\xaf");                                  // overlong '/'
}

TEST(OneLine, ControlCharInNamesTheFirst) {
  EXPECT_EQ(control_char_in("plain name \xc3\xa9"), "");
  EXPECT_EQ(control_char_in("a\tb"), "\\t");
  EXPECT_EQ(control_char_in("a\tb", true), "");
  EXPECT_EQ(control_char_in("x\ny\x1b"), "\\n");
  EXPECT_EQ(control_char_in("x\xc2\x85y"), "\\u0085");
  EXPECT_EQ(control_char_in(std::string_view("nul\0here", 8)), "\\x00");
}

}  // namespace
}  // namespace colo
