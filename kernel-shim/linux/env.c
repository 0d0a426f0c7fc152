/* SPDX-License-Identifier: MIT */
/* Configuration from the environment (WEFT_WORKERS and the rest). */
#include <stdlib.h>

#include "shim.h"

const char *shim_getenv(const char *name) { return getenv(name); }
