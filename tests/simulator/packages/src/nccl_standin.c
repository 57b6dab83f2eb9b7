/*
 * gpu-fleet simulator stand-in, not NVIDIA's libnccl (TEST ONLY).
 *
 * A real ELF shared library that answers like libnccl.so.2 where a deployment looks:
 *   - ncclGetVersion(int *) returns the version code (e.g. 21403 for 2.14.3), so a ctypes check
 *     such as `ctypes.CDLL("libnccl.so.2").ncclGetVersion(byref(v))` works;
 *   - the string "NCCL version <x.y.z>+cuda<a.b>" is embedded, as real libnccl carries it, so
 *     `strings libnccl.so.2 | grep 'NCCL version'` finds the build.
 * No collective is implemented. NCCL_FULL_VERSION is passed by build-repo.sh (e.g. "2.14.3+cuda11.7").
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "nccl.h"

#ifndef NCCL_FULL_VERSION
#error "build with -DNCCL_FULL_VERSION=\"x.y.z+cudaA.B\""
#endif

__attribute__((used, visibility("default")))
const char ncclStandinVersionString[] = "NCCL version " NCCL_FULL_VERSION;

__attribute__((used, visibility("default")))
const char ncclStandinNotice[] =
    "gpu-fleet simulator stand-in, not NVIDIA's package: libnccl " NCCL_FULL_VERSION
    " (test only, no collectives)";

__attribute__((visibility("default")))
ncclResult_t ncclGetVersion(int *version) {
  if (version == 0) return ncclInvalidArgument;
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

__attribute__((visibility("default")))
const char *ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}
