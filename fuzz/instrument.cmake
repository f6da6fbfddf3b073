# Included from the top CMakeLists.txt when COLO_BUILD_FUZZ is ON, before any target exists:
# every library is built with libFuzzer's coverage instrumentation plus ASan and UBSan, so the
# fuzz targets in fuzz/ see coverage and catch memory errors and undefined behaviour anywhere.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR
    "COLO_BUILD_FUZZ=ON needs Clang (libFuzzer is part of Clang), but the C++ compiler is "
    "${CMAKE_CXX_COMPILER_ID} (${CMAKE_CXX_COMPILER}). Configure a separate build directory with "
    "CC=clang-14 CXX=clang++-14, or simply run scripts/fuzz.sh (apt-get install clang-14 libclang-rt-14-dev).")
endif()
if(COLO_SANITIZE)
  message(FATAL_ERROR "COLO_BUILD_FUZZ=ON already enables ASan+UBSan; leave COLO_SANITIZE OFF")
endif()
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
                    -fno-omit-frame-pointer)
add_link_options(-fsanitize=address,undefined)
# The fuzz build hunts crashes; warnings are enforced by the GCC build (Clang-only warnings in
# code under active development must not stop the fuzz run).
add_compile_options(-Wno-error)
