// The files `colo slurm conf` writes: the task prolog keeps odd paths as one argument each.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "slurm/slurm_conf.h"

namespace colo::slurm {
namespace {

TEST(TaskProlog, PathsWithBlanksQuotesAndDollarsStayOneArgument) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("colo prolog $HOME 'q' " + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path fake = dir / "colo";
  std::ofstream(fake) << "#!/bin/sh\nfor a in \"$@\"; do printf '[%s]\\n' \"$a\"; done\n";
  fs::permissions(fake, fs::perms::owner_all);
  NodeConf n;
  n.colo_binary = fake.string();
  n.site_path = (dir / "site it's.toml").string();
  const fs::path script = dir / "prolog";
  std::ofstream(script) << task_prolog_script(n);
  std::string out;
  if (FILE* p = ::popen(("/bin/sh " + shell_word(script.string())).c_str(), "r")) {
    char buf[512];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    EXPECT_EQ(::pclose(p), 0);
  }
  EXPECT_EQ(out, "[slurm]\n[task-prolog]\n[--site]\n[" + n.site_path + "]\n");
  EXPECT_EQ(shell_word("a'b"), "'a'\\''b'");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace colo::slurm
