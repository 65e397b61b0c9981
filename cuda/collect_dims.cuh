// Sizes fixed by SPEC 2-3 that the collection headers use. The kernel preamble defines the same
// names from src/nets/layout.ts (src/kernels/collect_layout.ts commonConstants); these fallbacks
// serve the standalone harnesses, and an identical redefinition is legal, a different one an error.
#pragma once

#ifndef MARKET_FEATURES
#define MARKET_FEATURES 51
#endif
#ifndef STATE_DIM
#define STATE_DIM 54
#endif
#ifndef NUM_ACTIONS
#define NUM_ACTIONS 45
#endif
#ifndef CURIOSITY_OUT
#define CURIOSITY_OUT 32
#endif
