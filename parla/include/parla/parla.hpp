// SPDX-License-Identifier: MIT
// The whole public API of the task runtime (README: "Task runtime").
#pragma once

#include "parla/array.hpp"
#include "parla/device.hpp"
#include "parla/error.hpp"
#include "parla/placement.hpp"
#include "parla/runtime.hpp"
#include "parla/task.hpp"
#include "parla/task_space.hpp"
#include "parla/variants.hpp"
