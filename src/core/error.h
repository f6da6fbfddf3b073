#pragma once
// Errors that are the user's to fix (bad input, bad flags). Their message is one line that
// names the problem and, where there is one, the location (file:line).
#include <stdexcept>
#include <string>

namespace colo {

class UserError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace colo
