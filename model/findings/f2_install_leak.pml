/*
 * Finding F2 (core before ca8aa8d, CORE_BEFORE_F2_FIX): procd installs the object and answers with a STAGING handle
 * (or the reply is lost). The core refuses the handle, deletes it and
 * denies, then DETACHes its own copy (which preserves the child's) and
 * never sends RETIRE: the child keeps working authority behind a DENIED
 * decision. Invariant (c) / quiescence fails.
 */
#define CORE_BEFORE_F2_FIX
#include "../powerboxd.pml"
