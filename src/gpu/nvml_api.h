#pragma once
// The subset of NVML's C API that colo calls, written from NVIDIA's nvml.h documentation (the
// header is not needed at build time: the library is dlopen()ed). Layouts and values match
// nvml.h of CUDA 12; only what colo uses is here. The in-tree fake NVML implements exactly
// these functions, so this header is its contract too.
#include <cstdint>

extern "C" {

typedef enum nvmlReturn_enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_INSUFFICIENT_POWER = 8,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_IRQ_ISSUE = 11,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_CORRUPTED_INFOROM = 14,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_RESET_REQUIRED = 16,
  NVML_ERROR_OPERATING_SYSTEM = 17,
  NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_MEMORY = 20,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

typedef struct nvmlDevice_st* nvmlDevice_t;

#define NVML_DEVICE_UUID_BUFFER_SIZE 80
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_DEVICE_MIG_DISABLE 0
#define NVML_DEVICE_MIG_ENABLE 1
// usedGpuMemory when the driver cannot tell (Windows WDDM).
#define NVML_VALUE_NOT_AVAILABLE (~0ULL)

typedef struct nvmlMemory_st {
  unsigned long long total;  // bytes
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

// Layout used by nvmlDeviceGetComputeRunningProcesses_v2 and _v3 (except the _v3 of drivers
// 535.43.02-535.86.x, which appends usedGpuCcProtectedMemory: nvml_backend.cpp reads both).
typedef struct nvmlProcessInfo_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;  // bytes
  unsigned int gpuInstanceId;        // 0xFFFFFFFF without MIG
  unsigned int computeInstanceId;
} nvmlProcessInfo_t;

typedef struct nvmlUtilization_st {
  unsigned int gpu;     // % of the last sample period with a kernel running
  unsigned int memory;  // % of the period with device memory being read or written
} nvmlUtilization_t;

// GPU Performance Monitoring (Hopper and newer).
typedef struct nvmlGpmSample_st* nvmlGpmSample_t;

typedef enum {
  NVML_GPM_METRIC_GRAPHICS_UTIL = 1,
  NVML_GPM_METRIC_SM_UTIL = 2,       // % of SMs busy (SMACT), 0..100
  NVML_GPM_METRIC_SM_OCCUPANCY = 3,  // % of warps resident vs. maximum (SMOCC), 0..100
  NVML_GPM_METRIC_MAX = 98
} nvmlGpmMetricId_t;

typedef struct {
  unsigned int metricId;
  nvmlReturn_t nvmlReturn;
  double value;
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;
} nvmlGpmMetric_t;

#define NVML_GPM_METRICS_GET_VERSION 1
typedef struct {
  unsigned int version;     // NVML_GPM_METRICS_GET_VERSION
  unsigned int numMetrics;  // entries of metrics[] to fill
  nvmlGpmSample_t sample1;
  nvmlGpmSample_t sample2;
  nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;

#define NVML_GPM_SUPPORT_VERSION 1
typedef struct {
  unsigned int version;  // NVML_GPM_SUPPORT_VERSION
  unsigned int isSupportedDevice;
} nvmlGpmSupport_t;

// Accounting mode (nvidia-smi -am 1): the driver keeps, per process, the most memory it held,
// also after it exited (a buffer of recent processes).
typedef enum nvmlEnableState_enum { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 } nvmlEnableState_t;

typedef struct nvmlAccountingStats_st {
  unsigned int gpuUtilization;
  unsigned int memoryUtilization;
  unsigned long long maxMemoryUsage;  // bytes
  unsigned long long time;            // ms the process ran
  unsigned long long startTime;       // CPU timestamp in µs
  unsigned int isRunning;
  unsigned int reserved[5];
} nvmlAccountingStats_t;

// Function types, one per symbol colo resolves.
typedef nvmlReturn_t (*nvmlInit_v2_fn)(void);
typedef nvmlReturn_t (*nvmlShutdown_fn)(void);
typedef const char* (*nvmlErrorString_fn)(nvmlReturn_t);
typedef nvmlReturn_t (*nvmlSystemGetDriverVersion_fn)(char*, unsigned int);
typedef nvmlReturn_t (*nvmlDeviceGetCount_v2_fn)(unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByIndex_v2_fn)(unsigned int, nvmlDevice_t*);
typedef nvmlReturn_t (*nvmlDeviceGetUUID_fn)(nvmlDevice_t, char*, unsigned int);
typedef nvmlReturn_t (*nvmlDeviceGetName_fn)(nvmlDevice_t, char*, unsigned int);
typedef nvmlReturn_t (*nvmlDeviceGetMemoryInfo_fn)(nvmlDevice_t, nvmlMemory_t*);
typedef nvmlReturn_t (*nvmlDeviceGetComputeRunningProcesses_fn)(nvmlDevice_t, unsigned int*,
                                                                nvmlProcessInfo_t*);
typedef nvmlReturn_t (*nvmlDeviceGetUtilizationRates_fn)(nvmlDevice_t, nvmlUtilization_t*);
typedef nvmlReturn_t (*nvmlDeviceGetPowerUsage_fn)(nvmlDevice_t, unsigned int*);  // mW
typedef nvmlReturn_t (*nvmlDeviceGetTotalEnergyConsumption_fn)(nvmlDevice_t,
                                                               unsigned long long*);  // mJ
typedef nvmlReturn_t (*nvmlDeviceGetMigMode_fn)(nvmlDevice_t, unsigned int* current,
                                                unsigned int* pending);
typedef nvmlReturn_t (*nvmlDeviceGetMaxMigDeviceCount_fn)(nvmlDevice_t, unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetMigDeviceHandleByIndex_fn)(nvmlDevice_t, unsigned int,
                                                               nvmlDevice_t*);
typedef nvmlReturn_t (*nvmlGpmQueryDeviceSupport_fn)(nvmlDevice_t, nvmlGpmSupport_t*);
typedef nvmlReturn_t (*nvmlGpmSampleAlloc_fn)(nvmlGpmSample_t*);
typedef nvmlReturn_t (*nvmlGpmSampleFree_fn)(nvmlGpmSample_t);
typedef nvmlReturn_t (*nvmlGpmSampleGet_fn)(nvmlDevice_t, nvmlGpmSample_t);
typedef nvmlReturn_t (*nvmlGpmMetricsGet_fn)(nvmlGpmMetricsGet_t*);
typedef nvmlReturn_t (*nvmlDeviceGetAccountingMode_fn)(nvmlDevice_t, nvmlEnableState_t*);
typedef nvmlReturn_t (*nvmlDeviceGetAccountingStats_fn)(nvmlDevice_t, unsigned int pid, nvmlAccountingStats_t*);

}  // extern "C"
