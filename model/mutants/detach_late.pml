/*
 * Mutant (e): release ends an unpublished grant before it gives its own
 * object copy back (the core before review D4), so vfsd sees RETIRE
 * before DETACH for one object. spin must reject it.
 */
#define MUT_DETACH_LATE
#include "../powerboxd.pml"
