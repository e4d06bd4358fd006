// SPDX-License-Identifier: MIT
// Arrays: use in tasks, views that move only their bytes, coherence after
// a reduction then a scatter (Parla #149), manual movement (clone_here,
// copy_into), placement by where the data is, data that outlives the
// runtime. Bodies touch device memory through the device's own read and
// write, so the same test runs on host and OpenCL devices.
#include <numeric>

#include "parla_test_support.hpp"

using namespace parla;

namespace {

std::vector<double> read_view(const Array &a) {
  std::vector<double> v(a.bytes() / sizeof(double));
  current_device().read(a.local(), a.offset(), v.data(), a.bytes());
  return v;
}

void write_view(const Array &a, const std::vector<double> &v) {
  current_device().write(a.local(), a.offset(), v.data(), a.bytes());
}

std::vector<double> iota(size_t n, double from) {
  std::vector<double> v(n);
  std::iota(v.begin(), v.end(), from);
  return v;
}

} // namespace

Test(arrays, a_task_reads_and_writes_an_array_on_its_device) {
  Runtime rt(parla_test::options());
  TaskSpace T("T");
  std::vector<double> host = iota(256, 1);
  Array a = Array::wrap(host);
  Device &dev = rt.device(parla_test::arch(), 1);
  rt.spawn(T[0], {.placement = dev, .inout = {a}}, [a] {
    std::vector<double> v = read_view(a);
    for (double &x : v)
      x *= 2;
    write_view(a, v);
  });
  rt.wait();
  cr_expect_eq(a.valid_bytes_on(dev), a.bytes(), "the writer's space holds the array");
  if (parla_test::opencl_backend())
    cr_expect(host[3] == 4, "the host copy is stale until synchronised (got %g)", host[3]);
  a.sync_host();
  for (size_t i = 0; i < host.size(); ++i)
    cr_assert_eq(host[i], 2.0 * (static_cast<double>(i) + 1), "element %zu", i);
}

Test(arrays, a_view_moves_and_invalidates_only_its_bytes) {
  Runtime rt(parla_test::options());
  TaskSpace T("T");
  std::vector<double> host = iota(64, 0);
  Array a = Array::wrap(host);
  Array second = a.elements<double>(32, 32);
  Device &dev = rt.device(parla_test::arch(), 0);
  rt.spawn(T[0], {.placement = dev, .inout = {second}}, [second] {
    std::vector<double> v = read_view(second);
    cr_expect_eq(v[0], 32.0);
    for (double &x : v)
      x = -x;
    write_view(second, v);
  });
  rt.wait();
  cr_expect_eq(second.valid_bytes_on(dev), second.bytes());
  if (parla_test::opencl_backend()) {
    cr_expect_eq(a.elements<double>(0, 32).valid_bytes_on(dev), 0u, "the other half never moved");
    cr_expect(a.coherence() == "0-256:host 256-512:" + dev.name(), "coherence: %s",
              a.coherence().c_str());
  }
  a.sync_host();
  cr_expect(host[31] == 31 && host[32] == -32 && host[63] == -63);
}

// Parla #149: after a reduction over blocks written on two devices, every
// later reader sees the reduced value, round after round.
Test(arrays, values_stay_right_after_reductions_and_scatters) {
  Runtime rt(parla_test::options());
  TaskSpace P("P"), R("R"), S("S");
  constexpr size_t kBlock = 4;
  constexpr int kRounds = 4;
  std::vector<double> host(2 * kBlock, 1.0);
  std::vector<double> sum_host(1, 0.0);
  Array data = Array::wrap(host), sum = Array::wrap(sum_host);
  Array block[2] = {data.elements<double>(0, kBlock), data.elements<double>(kBlock, kBlock)};
  for (int r = 0; r < kRounds; ++r) {
    for (int b = 0; b < 2; ++b) {
      Device &dev = rt.device(parla_test::arch(), b);
      TaskRefs after = r > 0 ? TaskRefs(S(r - 1, b)) : TaskRefs();
      rt.spawn(P(r, b), {.after = after, .placement = dev, .inout = {block[b]}}, [blk = block[b]] {
        std::vector<double> v = read_view(blk);
        for (double &x : v)
          x += 1;
        write_view(blk, v);
      });
    }
    rt.spawn(R[r],
             {.after = P(r, slice(0, 2)),
              .placement = rt.device(parla_test::arch(), 0),
              .in = {data},
              .out = {sum}},
             [data, sum] {
               std::vector<double> v = read_view(data);
               write_view(sum, {std::accumulate(v.begin(), v.end(), 0.0)});
             });
    for (int b = 0; b < 2; ++b)
      rt.spawn(S(r, b),
               {.after = R[r],
                .placement = rt.device(parla_test::arch(), 1 - b),
                .in = {sum},
                .inout = {block[b]}},
               [sum, blk = block[b]] {
                 const double s = read_view(sum)[0];
                 std::vector<double> v = read_view(blk);
                 for (size_t j = 0; j < v.size(); ++j)
                   v[j] = s / 8 + static_cast<double>(j);
                 write_view(blk, v);
               });
  }
  rt.wait();
  // The same in program order.
  std::vector<double> ref(2 * kBlock, 1.0);
  double ref_sum = 0;
  for (int r = 0; r < kRounds; ++r) {
    for (double &x : ref)
      x += 1;
    ref_sum = std::accumulate(ref.begin(), ref.end(), 0.0);
    for (size_t i = 0; i < ref.size(); ++i)
      ref[i] = ref_sum / 8 + static_cast<double>(i % kBlock);
  }
  data.sync_host();
  sum.sync_host();
  cr_expect_eq(sum_host[0], ref_sum);
  for (size_t i = 0; i < host.size(); ++i)
    cr_expect_eq(host[i], ref[i], "element %zu: %g, expected %g", i, host[i], ref[i]);
}

Test(arrays, clone_here_and_copy_into_move_data_by_hand) {
  Runtime rt(parla_test::options());
  TaskSpace T("T");
  std::vector<double> src_host = iota(16, 10), dst_host(16, 0.0);
  Array src = Array::wrap(src_host), dst = Array::wrap(dst_host);
  Device &dev = rt.device(parla_test::arch(), 1);
  auto h = rt.spawn(T[0], {.placement = dev}, [src, dst] {
    src.clone_here();
    const std::vector<double> seen = read_view(src);
    src.elements<double>(0, 8).copy_into(dst.elements<double>(8, 8));
    return seen;
  });
  cr_expect(h.get() == src_host, "clone_here brought the data");
  cr_expect_eq(src.valid_bytes_on(dev), src.bytes(), "a clone is a shared copy");
  cr_expect_eq(dst.elements<double>(8, 8).valid_bytes_on(dev), 64u);
  dst.sync_host();
  for (int i = 0; i < 8; ++i)
    cr_expect(dst_host[8 + static_cast<size_t>(i)] == 10 + i &&
              dst_host[static_cast<size_t>(i)] == 0);
  cr_expect(!parla_test::thrown<Error>([&] { src.copy_into(dst.elements<double>(0, 3)); }).empty(),
            "views of different sizes");
  cr_expect(parla_test::contains(parla_test::thrown<Error>([&] { (void)src.view(100, 100); }),
                                 "a view of bytes [100, 200)"));
}

Test(arrays, tasks_go_where_their_data_is) {
  Runtime rt(parla_test::options());
  TaskSpace W("W"), T("T");
  Array a = Array::zeros(1 << 20);
  Device &d1 = rt.device(parla_test::arch(), 1);
  rt.spawn(W[0], {.placement = d1, .out = {a}},
           [a] { write_view(a.elements<double>(0, 1), {5.0}); });
  rt.wait();
  for (int i = 0; i < 4; ++i) {
    auto h = rt.spawn(
        T[i],
        {.after = i ? TaskRefs(T[i - 1]) : TaskRefs(), .placement = parla_test::arch(), .in = {a}},
        [] { return &current_device(); });
    if (parla_test::opencl_backend())
      cr_expect_eq(h.get(), &d1, "task %d: 30 * L outweighs the load terms", i);
    else
      h.get(); // both host devices share the host's memory: no device is closer
  }
}

Test(arrays, data_written_on_a_device_outlives_the_runtime) {
  std::vector<double> host(8, 0.0);
  Array a = Array::wrap(host);
  {
    Runtime rt(parla_test::options());
    TaskSpace T("T");
    rt.spawn(T[0], {.placement = rt.device(parla_test::arch(), 0), .out = {a}},
             [a] { write_view(a, iota(8, 7)); });
    rt.wait();
  }
  // The device is gone; its replica went to the host first.
  a.sync_host();
  cr_expect(host == iota(8, 7));
}
