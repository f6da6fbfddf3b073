#pragma once
// A file the user names on the command line for colo to write (--report, --out): written whole or
// not at all, without harm to what the name points at.
#include <string>
#include <string_view>

namespace colo::cli {

// A regular file is replaced atomically (a temporary of its own beside it, then a rename): an
// existing one keeps its permissions, a new one gets the umask's. A symbolic link keeps being a
// link: its target is replaced. Written in place, as a shell's redirection would: a file that is
// not regular (/dev/null, a FIFO; renaming over it would destroy a device node), a name under
// /dev or /proc (/dev/stdout leads to whatever stdout is, a log opened for appending included),
// and a writable file in a directory colo may not create in. Throws
// UserError starting with `what` (the flag) and naming the path on any failure (full disk, no
// permission, a directory, a missing parent directory).
void write_output_file(const std::string& path, const std::string& text, std::string_view what);
// The checks of write_output_file that can be made before the work whose result it writes (a
// directory, a missing parent directory, an empty name), with the same errors.
void check_output_path(const std::string& path, std::string_view what);

}  // namespace colo::cli
