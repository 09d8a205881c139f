/*
 * Split-phase mutant: a late reply accepted by the re-sent call: its sequence is not compared.
 * spin must reject it; make model-check fails if it does not.
 */
#define MUT_SEQ_IGNORED
#include "../split.pml"
