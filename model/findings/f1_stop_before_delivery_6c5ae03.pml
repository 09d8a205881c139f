/*
 * Finding F1 (core at 6c5ae03): CANCEL, CONSUME or EXPIRE of a published
 * runtime-reply grant before its DECISION reply is delivered: revocation
 * deletes the unexported alias the reply still owes, so DECISION answers
 * STATE instead of the published APPROVED, forever, and the request never
 * retires. Invariant (F) fails (and liveness (h) with it). Today's core
 * (9592232) keeps the alias while the reply is owed; vfsd's RETIRE kills
 * it, so it leaves dead with the reply.
 */
#define CORE_AT_6C5AE03
#include "../powerboxd.pml"
