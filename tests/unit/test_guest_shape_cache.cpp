// SPDX-License-Identifier: MIT
// The guest's table of learned call shapes (shim/shape_cache.hpp): a shape
// is known once learned, until forget_all; a table full of shapes that never
// recur still learns new ones (evicting old ones), so that a long-running
// program's later shapes do not all stay sync.
#include <criterion/criterion.h>

#include <cstdint>

#include "shim/shape_cache.hpp"

using ava::guest::ShapeCache;

Test(guest_shape_cache, learned_shapes_are_known_until_forgotten) {
  ShapeCache cache;
  const uint64_t a[] = {1, 2}, b[] = {1, 3};
  cr_expect(!cache.known(7, a, 2));
  cache.learn(7, a, 2);
  cr_expect(cache.known(7, a, 2));
  cr_expect(!cache.known(7, b, 2), "another value is another shape");
  cr_expect(!cache.known(8, a, 2), "another function is another shape");
  cache.forget_all();
  cr_expect(!cache.known(7, a, 2));
}

Test(guest_shape_cache, a_table_full_of_one_off_shapes_still_learns) {
  ShapeCache cache;
  // Many more one-off shapes (an event wait list naming a new event each
  // time) than the table has slots.
  for (uint64_t event = 1; event <= 100000; ++event)
    cache.learn(3, &event, 1);
  // Shapes a program makes afterwards are learned each time.
  for (uint64_t kernel = 1; kernel <= 1000; ++kernel) {
    const uint64_t shape[] = {kernel, 0xfeed};
    cache.learn(5, shape, 2);
    cr_assert(cache.known(5, shape, 2), "shape %llu not learned in a full table",
              static_cast<unsigned long long>(kernel));
  }
}
