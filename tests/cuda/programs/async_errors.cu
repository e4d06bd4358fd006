// async_errors: the error codes of the runtime calls that a remoting layer may
// send asynchronously, returned by the call itself (not by a later
// synchronization). First the case of a bug report: a stream and an event
// whose creation failed (no device here), used as they are (nullptr); every
// call on them must fail as natively (cudaErrorInsufficientDriver without a
// driver), where a layer that sends them async would return cudaSuccess.
// Without a device the program then ends as "no CUDA device" (exit 2).
//
// With a device: a table of argument errors, each right after a successful
// warm-up call of the same function on the same stream with otherwise the
// same arguments (so a layer that turns asynchronous after a success is
// caught). Each case expects the code the runtime documents for it; where the
// documentation names no code for the condition, the case only has to fail
// (kFails) or is only printed (kPrinted, where the runtime may accept it).
// After every case cudaGetLastError clears the error it left (printed for
// launches); after every function cudaStreamSynchronize must succeed: an
// error at the call must not leak into later calls. Cases with a host pointer
// (or NULL) as device memory run only where the device cannot access pageable
// memory (with HMM/ATS such a pointer may be valid, a bad one fault later).
// Left out as undefined behaviour: destroyed handles, a copy whose pointers do
// not match its kind (cudaMemcpy documents that as undefined), double frees.
// `--functions` prints the functions covered and calls no CUDA.
#include <cstdio>
#include <cstring>

#include "cu_check.cuh"

namespace {

constexpr size_t kBuf = size_t{2} << 20; // a multiple of the 2 MiB granule: no slack
constexpr size_t kW = 256, kH = 8;       // the pitched rectangle
constexpr int kTable = 64;
constexpr int kFails = -1;   // must fail, the code is printed only
constexpr int kPrinted = -2; // printed only
constexpr unsigned kBadFlags = 0x80;
const auto kBadKind = static_cast<cudaMemcpyKind>(77);
constexpr auto kH2D = cudaMemcpyHostToDevice, kD2H = cudaMemcpyDeviceToHost;
constexpr auto kD2D = cudaMemcpyDeviceToDevice;

const char *const kFunctions[] = {
    "cudaEventRecord",           "cudaEventRecordWithFlags", "cudaFreeAsync",
    "cudaLaunchKernel",          "cudaMemcpy2DAsync",        "cudaMemcpyAsync",
    "cudaMemcpyFromSymbolAsync", "cudaMemcpyPeerAsync",      "cudaMemcpyToSymbolAsync",
    "cudaMemset2DAsync",         "cudaMemsetAsync",          "cudaStreamWaitEvent"};

__device__ int d_table[kTable];
constexpr size_t kT = sizeof d_table;
int g_not_symbol[kTable];
// Host memory of the copies, as large as any count a case passes: a remoting
// layer may copy count bytes before it learns of the error.
unsigned char g_src[2 * kBuf], g_dst[2 * kBuf];

cudaStream_t g_s;
cudaEvent_t g_ev;
unsigned char *g_d1, *g_d2;
int *g_kp; // the launches' own buffer (2048 ints)
unsigned char *g_pitched;
size_t g_pitch;
int g_devices;
bool g_pageable; // the device can access pageable host memory
int g_kv = 7;
void *g_kargs[] = {&g_kp, &g_kv};
int g_failures;

__global__ void fill(int *p, int v) {
  if (p)
    p[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

void not_a_kernel() {}

using Call = cudaError_t (*)();
struct Case {
  const char *name;
  int expect; // a cudaError_t, kFails or kPrinted
  Call warm, call;
  bool host_ptr = false; // a host pointer as device memory: skipped with pageable access
  bool chevron = false;  // a <<<>>> launch: call() already read cudaGetLastError
};

void report(const char *fn, const char *what, cudaError_t got, int expect) {
  char line[192];
  std::snprintf(line, sizeof line, "%s: %s", fn, what);
  cu::print_error(line, got);
  const bool ok = expect == kPrinted || (expect == kFails ? got != cudaSuccess : got == expect);
  if (!ok) {
    ++g_failures;
    if (expect == kFails)
      std::printf("  expected an error\n");
    else
      std::printf("  expected %s (%d)\n", cudaGetErrorName(static_cast<cudaError_t>(expect)),
                  expect);
  }
}

bool covered(const char *fn) {
  for (const char *f : kFunctions)
    if (std::strcmp(f, fn) == 0)
      return true;
  return false;
}

template <size_t N> void run(const char *fn, const Case (&cases)[N], bool launch = false) {
  if (!covered(fn))
    cu::fail_check("every function run is in kFunctions");
  for (const Case &c : cases) {
    if (c.host_ptr && g_pageable) {
      std::printf("%s: %s: skipped (the device can access pageable memory)\n", fn, c.name);
      continue;
    }
    const cudaError_t warm = c.warm();
    if (warm != cudaSuccess) {
      char what[192];
      std::snprintf(what, sizeof what, "%s: warm-up before %s", fn, c.name);
      cu::fail(what, warm);
    }
    const cudaError_t got = c.call();
    report(fn, c.name, got, c.expect);
    const cudaError_t last = cudaGetLastError();
    if (launch) {
      // A failed runtime call is the thread's last error until read; a
      // <<<>>> case has read it already.
      char what[192];
      std::snprintf(what, sizeof what, "%s: cudaGetLastError after it", c.name);
      report(fn, what, last, c.chevron ? cudaSuccess : got);
    }
  }
  report(fn, "cudaStreamSynchronize", cudaStreamSynchronize(g_s), cudaSuccess);
}

// ---- the setup-failed case, the only one reached without a device ----

void setup_cases() {
  cudaStream_t s = nullptr;
  cudaEvent_t ev = nullptr;
  int *buf = nullptr;
  const cudaError_t es = cudaStreamCreate(&s);
  report("cudaStreamCreate", "setup", es, kPrinted);
  const cudaError_t ee = cudaEventCreate(&ev);
  report("cudaEventCreate", "setup", ee, kPrinted);
  // With a device the calls below get a real buffer; without one it stays
  // nullptr, as in the bug report.
  const cudaError_t em = cudaMalloc(&buf, 16);
  report("cudaMalloc", "setup (16 bytes)", em, kPrinted);
  const cudaError_t setup = es != cudaSuccess ? es : ee != cudaSuccess ? ee : em;
  const int want = setup == cudaSuccess ? static_cast<int>(cudaSuccess) : kFails;
  const int before = g_failures;
  // Each call starts with a clean last error, so a launch cannot report an
  // earlier call's error as its own.
  (void)cudaGetLastError();
  report("cudaEventRecord", "setup's event and stream", cudaEventRecord(ev, s), want);
  (void)cudaGetLastError();
  report("cudaEventRecordWithFlags", "setup's event and stream",
         cudaEventRecordWithFlags(ev, s, cudaEventRecordDefault), want);
  (void)cudaGetLastError();
  report("cudaStreamWaitEvent", "setup's stream and event", cudaStreamWaitEvent(s, ev, 0), want);
  (void)cudaGetLastError();
  report("cudaMemsetAsync", "setup's buffer and stream", cudaMemsetAsync(buf, 0, 16, s), want);
  (void)cudaGetLastError();
  report("cudaMemcpyAsync", "HostToDevice into setup's buffer",
         cudaMemcpyAsync(buf, g_src, 16, kH2D, s), want);
  (void)cudaGetLastError();
  fill<<<1, 4, 0, s>>>(buf, 1);
  report("cudaLaunchKernel", "<<<>>> on setup's stream", cudaGetLastError(), want);
  int one = 1;
  void *args[] = {&buf, &one};
  report("cudaLaunchKernel", "cudaLaunchKernel on setup's stream",
         cudaLaunchKernel(reinterpret_cast<const void *>(fill), dim3(1), dim3(4), args, 0, s),
         want);
  (void)cudaGetLastError();
  if (setup != cudaSuccess) {
    if (g_failures != before)
      cu::fail_check("every call on the handles of a failed setup fails");
    cu::fail("setup", setup); // no device: exit 2, else 1
  }
  report("cudaStreamSynchronize", "setup's stream", cudaStreamSynchronize(s), cudaSuccess);
  CU_CHECK(cudaFree(buf));
  g_s = s;
  g_ev = ev;
}

// ---- warm-ups: a successful call of each function on g_s ----

const Call w_record = [] { return cudaEventRecord(g_ev, g_s); };
const Call w_record_flags = [] {
  return cudaEventRecordWithFlags(g_ev, g_s, cudaEventRecordDefault);
};
const Call w_wait = [] { return cudaStreamWaitEvent(g_s, g_ev, cudaEventWaitDefault); };
const Call w_chevron = [] {
  fill<<<1, 32, 0, g_s>>>(g_kp, g_kv);
  return cudaGetLastError();
};
const Call w_launch = [] {
  return cudaLaunchKernel(reinterpret_cast<const void *>(fill), dim3(1), dim3(32), g_kargs, 0, g_s);
};
const Call w_to_symbol = [] { return cudaMemcpyToSymbolAsync(d_table, g_src, kT, 0, kH2D, g_s); };
const Call w_from_symbol = [] {
  return cudaMemcpyFromSymbolAsync(g_dst, d_table, kT, 0, kD2H, g_s);
};
const Call w_peer = [] { return cudaMemcpyPeerAsync(g_d2, 0, g_d1, 0, kBuf, g_s); };
const Call w_memset = [] { return cudaMemsetAsync(g_d1, 0x11, kBuf, g_s); };
const Call w_memset2d = [] { return cudaMemset2DAsync(g_pitched, g_pitch, 0x22, kW, kH, g_s); };
const Call w_h2d = [] { return cudaMemcpyAsync(g_d1, g_src, kBuf, kH2D, g_s); };
const Call w_d2d = [] { return cudaMemcpyAsync(g_d2, g_d1, kBuf, kD2D, g_s); };
const Call w_d2h = [] { return cudaMemcpyAsync(g_dst, g_d1, kBuf, kD2H, g_s); };
const Call w_default = [] { return cudaMemcpyAsync(g_d2, g_src, kBuf, cudaMemcpyDefault, g_s); };
const Call w_2d = [] {
  return cudaMemcpy2DAsync(g_pitched, g_pitch, g_src, kW, kW, kH, kH2D, g_s);
};
const Call w_free = [] {
  void *p = nullptr;
  const cudaError_t e = cudaMallocAsync(&p, 256, g_s);
  return e != cudaSuccess ? e : cudaFreeAsync(p, g_s);
};

void device_cases() {
  constexpr cudaError_t kInvalidValue = cudaErrorInvalidValue;
  constexpr cudaError_t kDirection = cudaErrorInvalidMemcpyDirection;
  constexpr cudaError_t kConfig = cudaErrorInvalidConfiguration;
  constexpr cudaError_t kDevice = cudaErrorInvalidDevice;

  // A NULL event: the runtime checks handles (cudaErrorInvalidResourceHandle
  // natively), not documented per condition. Flags: cudaEvent*External is
  // documented as invalid outside stream capture, 0x80 is no flag at all;
  // whether the runtime rejects either is not documented.
  static const Case record[] = {
      {"NULL event", kFails, w_record, [] { return cudaEventRecord(nullptr, g_s); }},
  };
  run("cudaEventRecord", record);
  static const Case record_flags[] = {
      {"flags 0x80", kPrinted, w_record_flags,
       [] { return cudaEventRecordWithFlags(g_ev, g_s, kBadFlags); }},
      {"cudaEventRecordExternal outside capture", kPrinted, w_record_flags,
       [] { return cudaEventRecordWithFlags(g_ev, g_s, cudaEventRecordExternal); }},
      {"NULL event", kFails, w_record_flags,
       [] { return cudaEventRecordWithFlags(nullptr, g_s, cudaEventRecordDefault); }},
  };
  run("cudaEventRecordWithFlags", record_flags);
  static const Case wait[] = {
      {"flags 0x80", kPrinted, w_wait, [] { return cudaStreamWaitEvent(g_s, g_ev, kBadFlags); }},
      {"cudaEventWaitExternal outside capture", kPrinted, w_wait,
       [] { return cudaStreamWaitEvent(g_s, g_ev, cudaEventWaitExternal); }},
      {"NULL event", kFails, w_wait, [] { return cudaStreamWaitEvent(g_s, nullptr, 0); }},
  };
  run("cudaStreamWaitEvent", wait);

  // Launches: limits of block size (1024) and grid.y (65535) are
  // configuration errors; 1 GiB of dynamic shared memory exceeds every device.
  static const Case launch[] = {
      {"<<<>>> 2048 threads per block", kConfig, w_chevron,
       [] {
         fill<<<1, 2048, 0, g_s>>>(g_kp, g_kv);
         return cudaGetLastError();
       },
       false, true},
      {"<<<>>> grid.y 1 << 20", kConfig, w_chevron,
       [] {
         fill<<<dim3(1, 1 << 20), 32, 0, g_s>>>(g_kp, g_kv);
         return cudaGetLastError();
       },
       false, true},
      {"<<<>>> 1 GiB dynamic shared memory", kFails, w_chevron,
       [] {
         fill<<<1, 32, size_t{1} << 30, g_s>>>(g_kp, g_kv);
         return cudaGetLastError();
       },
       false, true},
      {"2048 threads per block", kConfig, w_launch,
       [] {
         return cudaLaunchKernel(reinterpret_cast<const void *>(fill), dim3(1), dim3(2048), g_kargs,
                                 0, g_s);
       }},
      {"grid.y 1 << 20", kConfig, w_launch,
       [] {
         return cudaLaunchKernel(reinterpret_cast<const void *>(fill), dim3(1, 1 << 20), dim3(32),
                                 g_kargs, 0, g_s);
       }},
      // cudaErrorInvalidDeviceFunction natively; not documented per condition.
      {"not a kernel", kPrinted, w_launch,
       [] {
         return cudaLaunchKernel(reinterpret_cast<const void *>(not_a_kernel), dim3(1), dim3(32),
                                 g_kargs, 0, g_s);
       }},
  };
  run("cudaLaunchKernel", launch, true);

  // Symbols: a range past the symbol is cudaErrorInvalidValue and a kind that
  // is none cudaErrorInvalidMemcpyDirection; a valid kind of the wrong
  // direction and a variable that is no symbol are printed only.
  static const Case to_symbol[] = {
      {"count past the symbol", kInvalidValue, w_to_symbol,
       [] { return cudaMemcpyToSymbolAsync(d_table, g_src, kT + 4, 0, kH2D, g_s); }},
      {"offset + count past the symbol", kInvalidValue, w_to_symbol,
       [] { return cudaMemcpyToSymbolAsync(d_table, g_src, kT, 4, kH2D, g_s); }},
      {"kind 77", kDirection, w_to_symbol,
       [] { return cudaMemcpyToSymbolAsync(d_table, g_src, kT, 0, kBadKind, g_s); }},
      {"kind DeviceToHost", kPrinted, w_to_symbol,
       [] { return cudaMemcpyToSymbolAsync(d_table, g_src, kT, 0, kD2H, g_s); }},
      {"not a symbol", kPrinted, w_to_symbol,
       [] { return cudaMemcpyToSymbolAsync(g_not_symbol, g_src, kT, 0, kH2D, g_s); }},
  };
  run("cudaMemcpyToSymbolAsync", to_symbol);
  static const Case from_symbol[] = {
      {"count past the symbol", kInvalidValue, w_from_symbol,
       [] { return cudaMemcpyFromSymbolAsync(g_dst, d_table, kT + 4, 0, kD2H, g_s); }},
      {"offset + count past the symbol", kInvalidValue, w_from_symbol,
       [] { return cudaMemcpyFromSymbolAsync(g_dst, d_table, kT, 4, kD2H, g_s); }},
      {"kind 77", kDirection, w_from_symbol,
       [] { return cudaMemcpyFromSymbolAsync(g_dst, d_table, kT, 0, kBadKind, g_s); }},
      {"kind HostToDevice", kPrinted, w_from_symbol,
       [] { return cudaMemcpyFromSymbolAsync(g_dst, d_table, kT, 0, kH2D, g_s); }},
      {"not a symbol", kPrinted, w_from_symbol,
       [] { return cudaMemcpyFromSymbolAsync(g_dst, g_not_symbol, kT, 0, kD2H, g_s); }},
  };
  run("cudaMemcpyFromSymbolAsync", from_symbol);

  static const Case peer[] = {
      {"srcDevice 1 << 20", kDevice, w_peer,
       [] { return cudaMemcpyPeerAsync(g_d2, 0, g_d1, 1 << 20, kBuf, g_s); }},
      {"dstDevice 1 << 20", kDevice, w_peer,
       [] { return cudaMemcpyPeerAsync(g_d2, 1 << 20, g_d1, 0, kBuf, g_s); }},
      {"srcDevice = device count", kDevice, w_peer,
       [] { return cudaMemcpyPeerAsync(g_d2, 0, g_d1, g_devices, kBuf, g_s); }},
  };
  run("cudaMemcpyPeerAsync", peer);

  // Ranges past an allocation must fail (cudaErrorInvalidValue natively, but
  // not documented per condition); the allocations are 2 MiB, twice that is
  // past any rounding. Pitch < width is not documented at all: printed.
  static const Case set[] = {
      {"count past the allocation", kFails, w_memset,
       [] { return cudaMemsetAsync(g_d1, 0x11, 2 * kBuf, g_s); }},
      {"a host pointer", kInvalidValue, w_memset,
       [] { return cudaMemsetAsync(g_dst, 0x11, kBuf, g_s); }, true},
      {"NULL", kPrinted, w_memset, [] { return cudaMemsetAsync(nullptr, 0x11, kBuf, g_s); }, true},
  };
  run("cudaMemsetAsync", set);
  static const Case set2d[] = {
      {"pitch < width", kPrinted, w_memset2d,
       [] { return cudaMemset2DAsync(g_pitched, kW / 2, 0x22, kW, kH, g_s); }},
      {"a host pointer", kFails, w_memset2d,
       [] { return cudaMemset2DAsync(g_dst, kW, 0x22, kW, kH, g_s); }, true},
  };
  run("cudaMemset2DAsync", set2d);
  static const Case copy[] = {
      {"kind 77", kDirection, w_h2d,
       [] { return cudaMemcpyAsync(g_d1, g_src, kBuf, kBadKind, g_s); }},
      {"HostToDevice: count past the allocation", kFails, w_h2d,
       [] { return cudaMemcpyAsync(g_d1, g_src, 2 * kBuf, kH2D, g_s); }},
      {"DeviceToDevice: count past the allocations", kFails, w_d2d,
       [] { return cudaMemcpyAsync(g_d2, g_d1, 2 * kBuf, kD2D, g_s); }},
      {"DeviceToHost: count past the allocation", kFails, w_d2h,
       [] { return cudaMemcpyAsync(g_dst, g_d1, 2 * kBuf, kD2H, g_s); }},
      {"Default: count past the allocation", kFails, w_default,
       [] { return cudaMemcpyAsync(g_d2, g_src, 2 * kBuf, cudaMemcpyDefault, g_s); }},
  };
  run("cudaMemcpyAsync", copy);
  // cudaErrorInvalidPitchValue or cudaErrorInvalidValue: both documented.
  static const Case copy2d[] = {
      {"kind 77", kDirection, w_2d,
       [] { return cudaMemcpy2DAsync(g_pitched, g_pitch, g_src, kW, kW, kH, kBadKind, g_s); }},
      {"dpitch < width", kFails, w_2d,
       [] { return cudaMemcpy2DAsync(g_pitched, kW / 2, g_src, kW, kW, kH, kH2D, g_s); }},
      {"spitch < width", kFails, w_2d,
       [] { return cudaMemcpy2DAsync(g_pitched, g_pitch, g_src, kW / 2, kW, kH, kH2D, g_s); }},
  };
  run("cudaMemcpy2DAsync", copy2d);
  // A pointer no allocation of the pool holds: cudaErrorInvalidValue
  // natively, not documented per condition. NULL may be a no-op: printed.
  static const Case free_async[] = {
      {"a host pointer", kFails, w_free, [] { return cudaFreeAsync(g_dst, g_s); }, true},
      {"NULL", kPrinted, w_free, [] { return cudaFreeAsync(nullptr, g_s); }},
  };
  run("cudaFreeAsync", free_async);
}

} // namespace

int main(int argc, char **argv) {
  for (size_t i = 1; i < sizeof kFunctions / sizeof kFunctions[0]; ++i)
    if (std::strcmp(kFunctions[i - 1], kFunctions[i]) >= 0)
      cu::fail_check("kFunctions is sorted");
  if (argc == 2 && std::strcmp(argv[1], "--functions") == 0) {
    for (const char *f : kFunctions)
      std::printf("%s\n", f);
    return cu::kExitOk;
  }
  std::printf("async_errors\n");
  setup_cases();

  CU_CHECK(cudaGetDeviceCount(&g_devices));
  int device = -1, pageable = 0;
  CU_CHECK(cudaGetDevice(&device));
  CU_CHECK(cudaDeviceGetAttribute(&pageable, cudaDevAttrPageableMemoryAccess, device));
  g_pageable = pageable != 0;
  std::printf("pageable memory access: %s\n", g_pageable ? "yes" : "no");
  CU_CHECK(cudaMalloc(&g_d1, kBuf));
  CU_CHECK(cudaMalloc(&g_d2, kBuf));
  CU_CHECK(cudaMallocPitch(reinterpret_cast<void **>(&g_pitched), &g_pitch, kW, kH));
  CU_CHECK(cudaMalloc(&g_kp, 2048 * sizeof(int)));
  CU_CHECK(cudaMemset(g_kp, 0, 2048 * sizeof(int)));
  for (size_t i = 0; i < sizeof g_src; ++i)
    g_src[i] = static_cast<unsigned char>(i * 31 + 7);

  device_cases();

  // The warm-up launches ran, and none of the failed ones did.
  int ints[2048] = {};
  CU_CHECK(cudaMemcpy(ints, g_kp, sizeof ints, kD2H));
  int written = 0;
  for (int v : ints)
    written += v == g_kv;
  std::printf("ints the launches wrote: %d (32 expected)\n", written);
  CU_CHECK(cudaFree(g_kp));
  CU_CHECK(cudaFree(g_pitched));
  CU_CHECK(cudaFree(g_d2));
  CU_CHECK(cudaFree(g_d1));
  CU_CHECK(cudaEventDestroy(g_ev));
  CU_CHECK(cudaStreamDestroy(g_s));
  if (g_failures != 0)
    cu::fail_check("every case returned its expected code");
  CU_EXPECT(written == 32);
  return cu::finish_ok();
}
