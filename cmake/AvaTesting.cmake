# Test registration, shared by every directory.
#
# Every Criterion executable links ava_criterion: Criterion plus the main of
# tests/common/criterion_main.c, which exits with AVA_SKIP_RETURN_CODE when
# tests were skipped (Criterion alone would count them as passed). It must be
# linked by the executable itself: CMake hands an object library's objects
# only to its direct consumers.
#
# Every test is registered with ava_add_test, which requires labels (so that
# `ctest -L unit|cava|e2e|opencl|cuda|vm|kernel|bench` runs a part and `make
# test` prints the time per label) and sets ctest's skip code.
set(AVA_SKIP_RETURN_CODE 77)

pkg_check_modules(CRITERION REQUIRED IMPORTED_TARGET GLOBAL criterion)
add_library(ava_criterion OBJECT ${CMAKE_SOURCE_DIR}/tests/common/criterion_main.c)
target_link_libraries(ava_criterion PUBLIC PkgConfig::CRITERION)
target_compile_definitions(ava_criterion PRIVATE AVA_SKIP_RETURN_CODE=${AVA_SKIP_RETURN_CODE})

# ava_add_test(NAME name COMMAND cmd... LABELS label... [TIMEOUT s] [PROPERTIES k v...])
function(ava_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "COMMAND;LABELS;PROPERTIES" ${ARGN})
  if(NOT T_NAME OR NOT T_COMMAND)
    message(FATAL_ERROR "ava_add_test: NAME and COMMAND are required")
  endif()
  if(NOT T_LABELS)
    message(FATAL_ERROR "ava_add_test(${T_NAME}): LABELS are required")
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 600) # a hung test must fail, not stall the whole run
  endif()
  add_test(NAME ${T_NAME} COMMAND ${T_COMMAND})
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
                       SKIP_RETURN_CODE ${AVA_SKIP_RETURN_CODE} ${T_PROPERTIES})
  # `make test` runs two tests at a time; a QEMU guest (emulated CPUs, boot
  # timeouts) and a benchmark run alone.
  if("vm" IN_LIST T_LABELS OR "kernel" IN_LIST T_LABELS OR "bench" IN_LIST T_LABELS)
    set_tests_properties(${T_NAME} PROPERTIES RUN_SERIAL TRUE)
  endif()
endfunction()
