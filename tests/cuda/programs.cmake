# Unmodified CUDA programs (tests/cuda/programs): built by nvcc with
# `-cudart shared`, so the same binaries load the real libcudart.so.13
# natively and the guest one under `ava run` (tests/e2e/test_e2e_cuda.cpp and
# scripts/gpu-check.sh compare the two). Outputs: <build>/tests/cuda/cu_<name>.
# CMake's CUDA language is not enabled in this project, hence custom commands.
set(AVA_NVCC /usr/local/cuda/bin/nvcc CACHE FILEPATH "nvcc used to build CUDA test inputs")
if(NOT EXISTS ${AVA_NVCC})
  message(STATUS "tests/cuda: ${AVA_NVCC} not found, skipping the CUDA test programs")
  return()
endif()

set(AVA_CUDA_PROGRAMS
    device_query
    errors
    vector_add
    streams_events
    memcpy_bandwidth
    host_callback
    failing_launch
    launch_paths
    copy_ranges
    async_errors)
set(cu_programs_dir ${CMAKE_CURRENT_SOURCE_DIR}/programs)
set(cu_programs_gencode
    -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90
    -gencode arch=compute_90,code=compute_90)
set(cu_programs_outputs)
foreach(name ${AVA_CUDA_PROGRAMS})
  set(exe ${CMAKE_CURRENT_BINARY_DIR}/cu_${name})
  add_custom_command(
    OUTPUT ${exe}
    COMMAND ${AVA_NVCC} -cudart shared -O2 ${cu_programs_gencode} -o ${exe}
            ${cu_programs_dir}/${name}.cu
    DEPENDS ${cu_programs_dir}/${name}.cu ${cu_programs_dir}/cu_check.cuh
    COMMENT "nvcc: CUDA test program cu_${name}"
    VERBATIM)
  list(APPEND cu_programs_outputs ${exe})
endforeach()
# The driver API program links the toolkit's stub libcuda.so; natively it needs
# a driver (libcuda.so.1), so only scripts/gpu-check.sh runs it.
set(exe ${CMAKE_CURRENT_BINARY_DIR}/cu_driver_api)
add_custom_command(
  OUTPUT ${exe}
  COMMAND ${AVA_NVCC} -O2 -o ${exe} ${cu_programs_dir}/driver_api.cu
          -L/usr/local/cuda/lib64/stubs -lcuda
  DEPENDS ${cu_programs_dir}/driver_api.cu
  COMMENT "nvcc: CUDA test program cu_driver_api"
  VERBATIM)
list(APPEND cu_programs_outputs ${exe})
add_custom_target(cuda_programs ALL DEPENDS ${cu_programs_outputs})
