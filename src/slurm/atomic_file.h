#pragma once
// Replaces a file so that a reader (or a restart after kill -9) sees either the old content or
// the new, never a torn one: write a temporary file beside it, fsync, rename, fsync the directory.
#include <cstddef>
#include <string>
#include <sys/types.h>

namespace colo::slurm {

// Throws colo::UserError naming the path on any failure. Temporaries of this file that a killed
// writer left (<path>.tmp.XXXXXX, last modified over an hour ago) are removed after a write, unless
// `sweep` is false (a file in a user's directory, where such a name may be the user's own).
void write_file_atomically(const std::string& path, const std::string& text, mode_t mode, bool sweep = true);
// Writes all of `text` to `fd` (retrying short and interrupted writes): 0, or the errno of the
// write that failed (EIO where a write wrote nothing).
int write_all(int fd, const std::string& text);
// The whole file, or nullopt-like empty + false when it does not exist. Throws on other errors.
bool read_small_file(const std::string& path, std::string& text, std::size_t max_bytes = 64 << 20);

}  // namespace colo::slurm
