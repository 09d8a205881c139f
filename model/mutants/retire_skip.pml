/*
 * Mutant (G'): a BUSY or failed RETIRE is taken as acknowledged, so the
 * grant counts as retired while the child's install or the runtime alias
 * (exported, or held for the owed reply) still works. spin must reject it.
 */
#define MUT_RETIRE_SKIP
#include "../powerboxd.pml"
