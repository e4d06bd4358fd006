// SPDX-License-Identifier: MIT
// Parla's synthetic graphs (utility/graphs.py): independent, serial,
// reduction and reduction-scatter, over an array of doubles whose every
// element one task updates. The arithmetic is order-sensitive floating
// point, so a schedule that breaks a dependency gives different bits.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "parla/parla.hpp"

namespace parla_test {

enum class Graph { independent, serial, reduction, reduction_scatter };

inline const char *graph_name(Graph g) {
  switch (g) {
  case Graph::independent:
    return "independent";
  case Graph::serial:
    return "serial";
  case Graph::reduction:
    return "reduction";
  case Graph::reduction_scatter:
    return "reduction_scatter";
  }
  return "?";
}

inline double mix(double a, double b) {
  return std::fma(a, 1.000001, b * 0.999999) + 1e-7;
}

// Spawns the graph over `width` slots (a power of two) for `rounds`
// rounds; data[i] ends with what a sequential run computes.
inline void spawn_graph(parla::Runtime &rt, Graph g, int width, int rounds,
                        std::vector<double> &data, parla::TaskSpace &T) {
  using parla::TaskRefs;
  data.assign(static_cast<size_t>(width), 0.0);
  for (int i = 0; i < width; ++i)
    data[static_cast<size_t>(i)] = 1.0 + i * 0.5;
  double *d = data.data();
  for (int r = 0; r < rounds; ++r) {
    switch (g) {
    case Graph::independent:
      for (int i = 0; i < width; ++i)
        rt.spawn(T(r, i), {.after = r > 0 ? TaskRefs(T(r - 1, i)) : TaskRefs()},
                 [d, i] { d[i] = mix(d[i], i); });
      break;
    case Graph::serial:
      for (int i = 0; i < width; ++i) {
        const int prev = i > 0 ? i - 1 : width - 1;
        TaskRefs after;
        if (i > 0)
          after = T(r, i - 1);
        else if (r > 0)
          after = T(r - 1, width - 1);
        rt.spawn(T(r, i), {.after = after}, [d, i, prev] { d[i] = mix(d[i], d[prev]); });
      }
      break;
    case Graph::reduction:
    case Graph::reduction_scatter: {
      // Levels of a binary tree: at level l, task i folds slot i + 2^l into
      // slot i (i a multiple of 2^(l+1)).
      int level = 0;
      for (int stride = 1; stride < width; stride *= 2, ++level)
        for (int i = 0; i + stride < width; i += 2 * stride) {
          TaskRefs after;
          if (level > 0) {
            after.add(T(r, level - 1, i));
            after.add(T(r, level - 1, i + stride));
          } else if (r > 0) {
            after.add(T(r - 1, 99, i));
            after.add(T(r - 1, 99, i + stride));
            if (i == 0) // every reader of the last round's root is done
              after.add(T(r - 1, 99, parla::slice(0, width)));
          }
          rt.spawn(T(r, level, i), {.after = after},
                   [d, i, stride] { d[i] = mix(d[i], d[i + stride]); });
        }
      const int top = level - 1;
      // Every slot reads the root (Parla #149: after a reduction, readers
      // must see the reduced value, not a stale copy).
      for (int i = 0; i < width; ++i) {
        TaskRefs after = T(r, top, 0);
        if (g == Graph::reduction && i != 0)
          continue;
        if (i != 0)
          after.add(T(r, 99, 0)); // slot 0 is rewritten first
        rt.spawn(T(r, 99, i), {.after = after},
                 [d, i] { d[i] = i == 0 ? d[0] * 0.5 : mix(d[0], d[i]); });
      }
      if (g == Graph::reduction)
        for (int i = 1; i < width; ++i)
          rt.spawn(T(r, 99, i), {.after = T(r, 99, 0)}, [] {});
      break;
    }
    }
  }
}

// The same computation, in program order on this thread.
inline std::vector<double> reference(Graph g, int width, int rounds) {
  std::vector<double> v(static_cast<size_t>(width));
  for (int i = 0; i < width; ++i)
    v[static_cast<size_t>(i)] = 1.0 + i * 0.5;
  double *d = v.data();
  for (int r = 0; r < rounds; ++r) {
    switch (g) {
    case Graph::independent:
      for (int i = 0; i < width; ++i)
        d[i] = mix(d[i], i);
      break;
    case Graph::serial:
      for (int i = 0; i < width; ++i)
        d[i] = mix(d[i], d[i > 0 ? i - 1 : width - 1]);
      break;
    case Graph::reduction:
    case Graph::reduction_scatter:
      for (int stride = 1; stride < width; stride *= 2)
        for (int i = 0; i + stride < width; i += 2 * stride)
          d[i] = mix(d[i], d[i + stride]);
      d[0] *= 0.5;
      if (g == Graph::reduction_scatter)
        for (int i = 1; i < width; ++i)
          d[i] = mix(d[0], d[i]);
      break;
    }
  }
  return v;
}

} // namespace parla_test
