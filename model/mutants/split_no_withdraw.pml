/*
 * Split-phase mutant: CANCEL/EXPIRE of a showing prompt sends no WITHDRAW.
 * spin must reject it; make model-check fails if it does not.
 */
#define MUT_NO_WITHDRAW
#include "../split.pml"
