# SPDX-License-Identifier: GPL-2.0
# The test module running an OpenCL vector add from kernel space
# (ava_opencl_test.c). Built by tests/vm/CMakeLists.txt in a copy in the build
# tree, where this file becomes that copy's Kbuild:
#   make -C KDIR M=<copy> AVA_ROOT=<source tree> AVA_OPENCL_GEN=<build>/gen/opencl \
#        KBUILD_EXTRA_SYMBOLS="<ava.ko build>/Module.symvers <ava_opencl build>/Module.symvers" modules
ifeq ($(AVA_ROOT),)
$(error AVA_ROOT is not set: pass AVA_ROOT=<source tree>)
endif
ifeq ($(AVA_OPENCL_GEN),)
$(error AVA_OPENCL_GEN is not set: pass AVA_OPENCL_GEN=<build>/gen/opencl)
endif
obj-m := ava_opencl_test.o
ccflags-y := -Werror -I$(AVA_ROOT)/include/ava/kcompat -I$(AVA_ROOT)/include -I$(AVA_OPENCL_GEN)
ccflags-y += -I$(AVA_ROOT)/specs/opencl
# CL/ alone, as ava_opencl.ko's generated Kbuild links it: the C library beside
# it in /usr/include must stay out of a kernel build.
$(shell mkdir -p $(src)/ava_api && ln -sfn /usr/include/CL $(src)/ava_api/CL)
ccflags-y += -I$(src)/ava_api
