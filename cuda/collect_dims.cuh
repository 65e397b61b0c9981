// Sizes fixed by SPEC 2-3 that every collection header uses (src/nets/layout.ts has the same).
#pragma once

#define MARKET_FEATURES 51
#define STATE_DIM 54
#define NUM_ACTIONS 45
