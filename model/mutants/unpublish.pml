/*
 * Mutant (F): the core before 9592232. A published, undelivered approval
 * whose grant CANCEL, CONSUME or EXPIRE ends turns CANCELLED naming no
 * grant (grant_unpublish), and revocation deletes the unexported alias.
 * A published decision then changes before delivery. spin must reject it.
 */
#define MUT_UNPUBLISH
#include "../powerboxd.pml"
