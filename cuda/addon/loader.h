// Run-time loading of the CUDA driver and NVRTC (see loader.cc).
#pragma once

#include <string>

#include "cuda_api.h"

namespace cuapi {

// Each returns "" on success, or why the library is unusable (not found, symbol missing).
std::string loadDriver(const char* path, Driver& driver, void*& handle);
std::string loadNvrtc(const char* path, Nvrtc& nvrtc, void*& handle);

}  // namespace cuapi
