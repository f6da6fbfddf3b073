#pragma once
// The part of DCGM's C API (dcgm_agent.h, dcgm_structs.h, dcgm_fields.h of DCGM 3 and 4) colo
// calls, declared here so colo builds without DCGM installed: libdcgm is dlopen()ed at run
// time (dcgm_sampler.h). Values and layouts follow NVIDIA's public headers.
#include <cstdint>

namespace colo::gpu::dcgm {

using Return = int;                // dcgmReturn_t
using Handle = std::uintptr_t;     // dcgmHandle_t
using GpuGroup = std::uintptr_t;   // dcgmGpuGrp_t
using FieldGroup = std::uintptr_t; // dcgmFieldGrp_t

inline constexpr Return kOk = 0;
inline constexpr Return kNotSupported = -6;
inline constexpr Return kNoData = -14;
inline constexpr int kOperationModeAuto = 1;  // dcgmOperationMode_t: the engine samples by itself
inline constexpr int kGroupEmpty = 1;         // dcgmGroupType_t
inline constexpr unsigned short kFieldSmActive = 1002;     // DCGM_FI_PROF_SM_ACTIVE
inline constexpr unsigned short kFieldSmOccupancy = 1003;  // DCGM_FI_PROF_SM_OCCUPANCY
inline constexpr unsigned short kTypeDouble = 'd';         // DCGM_FT_DOUBLE
inline constexpr double kFp64Blank = 140737488355328.0;    // DCGM_FP64_BLANK: values ≥ this mean "no value"

struct FieldValueV1 {  // dcgmFieldValue_v1
  unsigned int version;
  unsigned short fieldId;
  unsigned short fieldType;
  int status;
  std::int64_t ts;  // µs since 1970
  union {
    std::int64_t i64;
    double dbl;
    char str[256];
    char blob[4096];
  } value;
};
// MAKE_DCGM_VERSION(dcgmFieldValue_v1, 1)
inline constexpr unsigned int kFieldValueVersion1 = static_cast<unsigned int>(sizeof(FieldValueV1) | (1u << 24));

// Function types, by the names dlsym() looks up.
using InitFn = Return (*)();
using ShutdownFn = Return (*)();
using StartEmbeddedFn = Return (*)(int op_mode, Handle* handle);
using StopEmbeddedFn = Return (*)(Handle handle);
using ConnectFn = Return (*)(const char* address, Handle* handle);
using DisconnectFn = Return (*)(Handle handle);
using GroupCreateFn = Return (*)(Handle handle, int type, const char* name, GpuGroup* group);
using GroupAddDeviceFn = Return (*)(Handle handle, GpuGroup group, unsigned int gpu_id);
using FieldGroupCreateFn = Return (*)(Handle handle, int count, const unsigned short* fields, const char* name,
                                      FieldGroup* group);
using WatchFieldsFn = Return (*)(Handle handle, GpuGroup group, FieldGroup fields, long long update_usec,
                                 double max_keep_age_s, int max_keep_samples);
using UpdateAllFieldsFn = Return (*)(Handle handle, int wait_for_update);
using GetLatestValuesForFieldsFn = Return (*)(Handle handle, int gpu_id, unsigned short fields[], unsigned int count,
                                              FieldValueV1 values[]);
using ErrorStringFn = const char* (*)(Return r);

}  // namespace colo::gpu::dcgm
