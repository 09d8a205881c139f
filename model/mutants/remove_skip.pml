/*
 * Mutant (e): a BUSY or failed VIEW REMOVE is taken as acknowledged, so
 * vfsd RETIRE and the generation retirement can precede the REMOVE ack.
 * spin must reject it.
 */
#define MUT_REMOVE_SKIP
#include "../powerboxd.pml"
