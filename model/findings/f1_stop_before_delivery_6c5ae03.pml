/*
 * Finding F1 (core at 6c5ae03, before grant_unpublish): CANCEL or EXPIRE
 * of a published runtime-reply grant before its DECISION reply is
 * delivered deletes the unexported alias; DECISION then answers STATE
 * forever and the request never retires. Liveness (h) fails.
 */
#define CORE_AT_6C5AE03
#define FINDING_F1
#include "../powerboxd.pml"
