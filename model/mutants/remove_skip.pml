/*
 * Mutant (e): a BUSY or failed VIEW REMOVE is taken as acknowledged, so
 * the generation can retire without the REMOVE ack. spin must reject it.
 */
#define MUT_REMOVE_SKIP
#include "../powerboxd.pml"
