/*
 * Split-phase mutant: CANCEL/EXPIRE of a showing prompt leaves the PROMPT call live, so the late answer to the withdrawn prompt is accepted.
 * spin must reject it; make model-check fails if it does not.
 */
#define MUT_WITHDRAW_KEEP
#include "../split.pml"
