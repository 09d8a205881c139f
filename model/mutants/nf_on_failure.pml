/*
 * Mutant (d): a vfsd transport failure is reported as NOT_FOUND. spin must
 * reject it.
 */
#define MUT_NF_ON_FAILURE
#include "../powerboxd.pml"
