// An attempt's output on its way to its log file (daemon/log_relay.h): bounded, the head and the
// tail kept, the file only growing.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "daemon/log_relay.h"
#include "daemon_harness.h"

namespace colo::daemon::testing {
namespace {

class RelayFile {
 public:
  explicit RelayFile(const TempDir& dir) : path_(dir.path() + "/stdout.log") {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  }
  ~RelayFile() { ::close(fd_); }
  RelayFile(const RelayFile&) = delete;
  RelayFile& operator=(const RelayFile&) = delete;
  int fd() const { return fd_; }
  std::string text() const { return read_file(path_); }

 private:
  std::string path_;
  int fd_ = -1;
};

const std::string kCap = "jobs.max_log = 1 MiB";

TEST(LogRelay, UnderItsCapEverythingIsWrittenAsItComesAndNothingAdded) {
  TempDir dir;
  RelayFile f(dir);
  LogRelay r(f.fd(), 10, 4, "stdout", kCap);
  r.take("01234", 5);
  EXPECT_EQ(f.text(), "01234");  // not held back until the end
  r.take("56789", 5);
  r.finish();
  EXPECT_EQ(f.text(), "0123456789");
  EXPECT_EQ(r.past_cap(), 0u);
  EXPECT_EQ(r.lost(), 0u);
}

TEST(LogRelay, PastItsCapTheHeadANoteAndTheLastBytesAreKept) {
  TempDir dir;
  RelayFile f(dir);
  LogRelay r(f.fd(), 10, 4, "stdout", kCap);
  r.take("0123456", 7);
  r.take("789abcdefgh", 11);  // crosses the cap inside one read
  const std::string head = "0123456789";
  const std::string passed =
      "\n[colo: this attempt's stdout passed jobs.max_log = 1 MiB: the rest is dropped but for its last 4 bytes, "
      "written here when the attempt ends]\n";
  EXPECT_EQ(f.text(), head + passed);  // said as it happens: a follower knows why nothing comes
  for (char c = 'i'; c <= 'z'; ++c) r.take(&c, 1);
  r.finish();
  r.finish();  // once
  EXPECT_EQ(r.past_cap(), 26u);
  EXPECT_EQ(r.lost(), 22u);
  EXPECT_EQ(f.text(), head + passed +
                          "\n[colo: 22 bytes of this attempt's stdout were dropped (jobs.max_log = 1 MiB); the last 4 "
                          "bytes follow]\nwxyz");
}

TEST(LogRelay, ALargeReadPastTheCapKeepsOnlyItsTail) {
  TempDir dir;
  RelayFile f(dir);
  LogRelay r(f.fd(), 4, 3, "stderr", kCap);
  const std::string big(100000, 'x');
  r.take(big.data(), big.size());
  r.take("END", 3);
  r.finish();
  const std::string text = f.text();
  EXPECT_EQ(text.substr(0, 4), "xxxx");
  EXPECT_EQ(text.substr(text.size() - 4), "\nEND");
  EXPECT_LT(text.size(), 400u);
  EXPECT_EQ(r.past_cap(), 100000u - 4 + 3);
  EXPECT_EQ(r.lost(), 100000u - 4);
}

TEST(LogRelay, NoCapWritesEverything) {
  TempDir dir;
  RelayFile f(dir);
  LogRelay r(f.fd(), 0, 0, "stdout", kCap);
  const std::string big(300000, 'y');
  r.take(big.data(), big.size());
  r.finish();
  EXPECT_EQ(f.text(), big);
}

TEST(LogRelay, AFileThatRefusesWritesIsCountedAndNeverBlocks) {
  const int full = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(full, 0);
  {
    LogRelay r(full, 0, 0, "stdout", kCap);
    r.take("abc", 3);
    r.take("de", 2);
    EXPECT_EQ(r.unwritten(), 5u);
  }
  ::close(full);
}

}  // namespace
}  // namespace colo::daemon::testing
