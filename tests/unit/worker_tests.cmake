# Worker runtime tests (included by tests/unit/CMakeLists.txt before its glob).
# They play a raw guest against the runtime serving "wtest", a spec written
# by hand the way cava generates one (worker/testing/): linked statically into
# most tests, and built as a plugin for test_worker_plugin.
if(NOT TARGET ava_worker_rt)
  return()
endif()

set(ava_wt_dir ${CMAKE_SOURCE_DIR}/worker/testing)
set(ava_wt_plugin_dir ${CMAKE_BINARY_DIR}/lib/ava/worker-test)

add_library(ava_wtest_spec STATIC ${ava_wt_dir}/wtest_spec.c ${ava_wt_dir}/wtest_lib.c)
target_link_libraries(ava_wtest_spec PUBLIC ava_worker_rt Threads::Threads)

add_library(ava_worker_fake_guest STATIC ${ava_wt_dir}/fake_guest.cpp)
target_link_libraries(ava_worker_fake_guest PUBLIC ava_worker_rt ava_transport Threads::Threads)

# The same spec as a plugin: it resolves the ava_w_* functions from the
# executable that loads it, exactly like a generated plugin under `ava worker`.
add_library(ava_worker_wtest MODULE ${ava_wt_dir}/wtest_spec.c ${ava_wt_dir}/wtest_lib.c)
set_target_properties(ava_worker_wtest PROPERTIES
  PREFIX "lib" OUTPUT_NAME ava_worker_wtest
  LIBRARY_OUTPUT_DIRECTORY ${ava_wt_plugin_dir})
target_link_libraries(ava_worker_wtest PRIVATE Threads::Threads)

set(ava_wt_static_tests protocol buffers handles teardown async callbacks heap)
foreach(feature IN LISTS ava_wt_static_tests)
  set(name test_worker_${feature})
  add_executable(${name} ${CMAKE_CURRENT_LIST_DIR}/${name}.cpp)
  target_link_libraries(${name} PRIVATE ava_worker_fake_guest ava_wtest_spec ava_worker_rt
                        ava_criterion ava_transport Threads::Threads)
  ava_add_test(NAME ${name} COMMAND ${name} LABELS unit)
endforeach()

# Links the runtime as objects and exports them, as the `ava` executable must.
add_executable(test_worker_plugin ${CMAKE_CURRENT_LIST_DIR}/test_worker_plugin.cpp)
target_link_libraries(test_worker_plugin PRIVATE ava_worker_rt_obj ava_worker_fake_guest
                      ava_criterion ava_transport Threads::Threads)
set_target_properties(test_worker_plugin PROPERTIES ENABLE_EXPORTS ON)
target_compile_definitions(test_worker_plugin PRIVATE
  AVA_WT_PLUGIN_DIR="${ava_wt_plugin_dir}")
add_dependencies(test_worker_plugin ava_worker_wtest)
ava_add_test(NAME test_worker_plugin COMMAND test_worker_plugin LABELS unit)
