/*
 * Mutant (e): RETIRE waits for ttyd's exact REMOVE acknowledgement (the
 * core before review D1), so ttyd's backpressure keeps a revoked grant,
 * or an exported runtime alias, alive at vfsd. spin must reject it.
 */
#define MUT_REMOVE_GATES
#include "../powerboxd.pml"
