# Worker runtime tests (included by tests/unit/CMakeLists.txt before its glob).
# They play a raw guest against the runtime serving the worker plugin that cava
# generates from tests/wtest/wtest.spec.c: linked statically into most tests,
# and loaded as a module (ava_worker_wtest, tests/wtest/wtest.cmake) by
# test_worker_plugin.
if(NOT TARGET ava_worker_rt)
  return()
endif()

add_library(ava_worker_fake_guest STATIC ${CMAKE_SOURCE_DIR}/worker/testing/fake_guest.cpp)
target_link_libraries(ava_worker_fake_guest PUBLIC ava_wtest_api ava_worker_rt ava_transport
                      Threads::Threads)
add_dependencies(ava_worker_fake_guest ava_gen_wtest)

set(ava_wt_static_tests protocol handshake buffers handles teardown async callbacks heap
    out_spare)
foreach(feature IN LISTS ava_wt_static_tests)
  set(name test_worker_${feature})
  add_executable(${name} ${CMAKE_CURRENT_LIST_DIR}/${name}.cpp)
  target_link_libraries(${name} PRIVATE ava_worker_fake_guest ava_wtest_worker ava_worker_rt
                        ava_criterion ava_transport Threads::Threads)
  ava_add_test(NAME ${name} COMMAND ${name} LABELS unit)
endforeach()

# Links the runtime as objects and exports them, as the `ava` executable must.
add_executable(test_worker_plugin ${CMAKE_CURRENT_LIST_DIR}/test_worker_plugin.cpp)
target_link_libraries(test_worker_plugin PRIVATE ava_worker_rt_obj ava_worker_fake_guest
                      ava_criterion ava_transport Threads::Threads)
set_target_properties(test_worker_plugin PROPERTIES ENABLE_EXPORTS ON)
target_compile_definitions(test_worker_plugin PRIVATE
  AVA_WT_PLUGIN_DIR="${AVA_WTEST_PLUGIN_DIR}")
add_dependencies(test_worker_plugin ava_worker_wtest)
ava_add_test(NAME test_worker_plugin COMMAND test_worker_plugin LABELS unit)

# Staged transfers end to end: the worker's book (worker/transfers.cpp) sends
# DATA over a real channel into the guest's table (shim/transfers.cpp).
if(TARGET ava_shim)
  add_executable(test_worker_transfers ${CMAKE_CURRENT_LIST_DIR}/test_worker_transfers.cpp)
  target_link_libraries(test_worker_transfers PRIVATE ava_worker_rt ava_shim ava_criterion
                        ava_transport ava_config Threads::Threads)
  ava_add_test(NAME test_worker_transfers COMMAND test_worker_transfers LABELS unit)
endif()
