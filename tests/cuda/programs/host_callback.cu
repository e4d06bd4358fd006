// host_callback: cudaLaunchHostFunc and cudaStreamAddCallback with user data,
// interleaved with kernels on two streams. Each stream's host functions must
// run in the order they were enqueued, before cudaStreamSynchronize returns,
// with their user data and (stream callbacks) the stream and a success status.
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "cu_check.cuh"

namespace {

constexpr int kStreams = 2;
constexpr int kPerStream = 6; // alternately host functions and stream callbacks

struct Log {
  std::mutex mu;
  std::vector<int> order[kStreams];
  int wrong_stream = 0;
  int bad_status = 0;
};

struct Tag {
  Log *log;
  int stream_index;
  int seq;
  cudaStream_t stream;
};

void record(Tag *t) {
  std::lock_guard<std::mutex> lock(t->log->mu);
  t->log->order[t->stream_index].push_back(t->seq);
}

void CUDART_CB host_fn(void *user_data) {
  record(static_cast<Tag *>(user_data));
}

void CUDART_CB stream_cb(cudaStream_t stream, cudaError_t status, void *user_data) {
  auto *t = static_cast<Tag *>(user_data);
  {
    std::lock_guard<std::mutex> lock(t->log->mu);
    t->log->wrong_stream += stream != t->stream;
    t->log->bad_status += status != cudaSuccess;
  }
  record(t);
}

__global__ void bump(int *counter, int by) {
  atomicAdd(counter, by);
}

} // namespace

int main() {
  std::printf("host_callback: %d streams, %d host calls each\n", kStreams, kPerStream);
  Log log;
  cudaStream_t streams[kStreams] = {};
  int *counter = nullptr;
  CU_CHECK(cudaMalloc(&counter, sizeof(int)));
  CU_CHECK(cudaMemset(counter, 0, sizeof(int)));
  for (cudaStream_t &s : streams)
    CU_CHECK(cudaStreamCreate(&s));

  std::vector<Tag> tags;
  tags.reserve(kStreams * kPerStream);
  for (int i = 0; i < kPerStream; ++i) {
    for (int s = 0; s < kStreams; ++s) {
      bump<<<4, 32, 0, streams[s]>>>(counter, s + 1);
      CU_CHECK_LAUNCH("bump");
      tags.push_back(Tag{&log, s, i, streams[s]});
      if (i % 2 == 0)
        CU_CHECK(cudaLaunchHostFunc(streams[s], host_fn, &tags.back()));
      else
        CU_CHECK(cudaStreamAddCallback(streams[s], stream_cb, &tags.back(), 0));
    }
  }
  for (cudaStream_t s : streams)
    CU_CHECK(cudaStreamSynchronize(s));

  int total = 0;
  CU_CHECK(cudaMemcpy(&total, counter, sizeof(int), cudaMemcpyDeviceToHost));
  bool in_order = true;
  for (int s = 0; s < kStreams; ++s) {
    std::string seen;
    for (int seq : log.order[s])
      seen += " " + std::to_string(seq);
    std::printf("stream %d order:%s\n", s, seen.c_str());
    in_order = in_order && log.order[s].size() == kPerStream;
    for (size_t i = 0; i < log.order[s].size(); ++i)
      in_order = in_order && log.order[s][i] == static_cast<int>(i);
  }
  const int want_total = 4 * 32 * kPerStream * (1 + 2);
  std::printf("counter: %d (want %d)\n", total, want_total);
  std::printf("callbacks with a wrong stream: %d, with an error status: %d\n", log.wrong_stream,
              log.bad_status);

  for (cudaStream_t s : streams)
    CU_CHECK(cudaStreamDestroy(s));
  CU_CHECK(cudaFree(counter));
  CU_EXPECT(in_order);
  CU_EXPECT(total == want_total);
  CU_EXPECT(log.wrong_stream == 0 && log.bad_status == 0);
  return cu::finish_ok();
}
