/*
 * Split-phase mutant: an INSTALL ended by deadline or cancellation is forgotten, so procd's late install outlives the DENIED/CANCELLED decision.
 * spin must reject it; make model-check fails if it does not.
 */
#define MUT_INSTALL_ABANDON
#include "../split.pml"
