/*
 * Mutant (a): ttyd BUSY on the ACTIVE row is taken as the acknowledgement,
 * so APPROVED can be published before ttyd acknowledged the row. spin
 * must reject it; make model-check fails if it does not.
 */
#define MUT_EARLY_APPROVE
#include "../powerboxd.pml"
