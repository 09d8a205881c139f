/*
 * Finding F1b (core before ca8aa8d, CORE_BEFORE_F1B_FIX): CONSUME ends the grant through grant_end,
 * not grant_stop, so grant_unpublish does not run. A CONSUME naming a
 * published runtime-reply grant before the DECISION reply is delivered
 * deletes the alias; DECISION answers STATE forever and the request never
 * retires. Liveness (h) fails.
 */
#define CORE_BEFORE_F1B_FIX
#include "../powerboxd.pml"
