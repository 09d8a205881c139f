/*
 * Split-phase mutant: ttyd replies are matched to the oldest live call of their op (in-order assumption), not by their echo; out-of-order replies are misattributed.
 * spin must reject it; make model-check fails if it does not.
 */
#define MUT_FIFO_MATCH
#include "../split.pml"
