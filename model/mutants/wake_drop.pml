/*
 * Mutant (f): a BUSY wake to launchd is forgotten instead of parked and
 * retried, so a terminal decision can retire without its wake. spin must
 * reject it.
 */
#define MUT_WAKE_DROP
#include "../powerboxd.pml"
