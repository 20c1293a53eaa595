// Declarations-only stand-in for gloo's header; see ../README.md.
#pragma once

#include "gloo/context.h"
