/* SPDX-License-Identifier: MIT */
/* weft_version: the library's version, from the header it was built with. */
#include "weft.h"

int weft_version(void) { return WEFT_VERSION; }
