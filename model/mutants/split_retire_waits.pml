/*
 * Split-phase mutant: RETIRE goes out only after ttyd acknowledged REMOVE (a silent ttyd delays it).
 * spin must reject it; make model-check fails if it does not.
 */
#define MUT_RETIRE_WAITS
#include "../split.pml"
