# The wtest API: a small real library and its spec, which cava remotes for the
# unit tests of the guest and worker runtimes (included by tests/unit). Defines
#   ava_gen_wtest      cava's output for wtest.spec.c, in ${AVA_GEN_DIR}/wtest
#   ava_wtest_api      include paths of wtest.h, the hooks and the generated headers
#   ava_wtest_guest    the generated guest library, static, for the guest tests
#   ava_wtest_worker   the generated worker plugin and the library, static
#   ava_worker_wtest   the same plugin as a module in ${AVA_WTEST_PLUGIN_DIR}
# Whatever includes a generated header also needs add_dependencies(x ava_gen_wtest).
if(TARGET ava_gen_wtest)
  return()
endif()

set(ava_wtest_dir ${CMAKE_SOURCE_DIR}/tests/wtest)
set(ava_wtest_gen ${AVA_GEN_DIR}/wtest)
set(AVA_WTEST_PLUGIN_DIR ${CMAKE_BINARY_DIR}/lib/ava/worker-test)

ava_generate_spec(NAME wtest SPEC ${ava_wtest_dir}/wtest.spec.c INCLUDES ${ava_wtest_dir})

add_library(ava_wtest_api INTERFACE)
target_include_directories(ava_wtest_api INTERFACE ${ava_wtest_gen} ${ava_wtest_dir})

if(TARGET ava_shim)
  add_library(ava_wtest_guest STATIC ${ava_wtest_dir}/wtest_guest_lib.c)
  target_link_libraries(ava_wtest_guest PUBLIC ava_wtest_api ava_shim)
  add_dependencies(ava_wtest_guest ava_gen_wtest)
endif()

if(TARGET ava_worker_rt)
  set(ava_wtest_worker_sources ${ava_wtest_gen}/wtest_worker.c ${ava_wtest_dir}/wtest_lib.c)
  add_library(ava_wtest_worker STATIC ${ava_wtest_worker_sources})
  target_link_libraries(ava_wtest_worker PUBLIC ava_wtest_api ava_worker_rt Threads::Threads)
  add_dependencies(ava_wtest_worker ava_gen_wtest)

  # It resolves the ava_w_* functions from the executable that loads it, as a
  # plugin under `ava worker` does; its hooks stay visible for dlsym.
  add_library(ava_worker_wtest MODULE ${ava_wtest_worker_sources})
  target_link_libraries(ava_worker_wtest PRIVATE ava_wtest_api Threads::Threads)
  set_target_properties(ava_worker_wtest PROPERTIES
    PREFIX "lib" OUTPUT_NAME ava_worker_wtest
    LIBRARY_OUTPUT_DIRECTORY ${AVA_WTEST_PLUGIN_DIR})
  add_dependencies(ava_worker_wtest ava_gen_wtest)
endif()
