/*
 * eva/native/__fc_builtin.h: the Frama-C builtins eva/eva_live.c calls,
 * for its native run (make eva, before the analysis; eva/eva.py): every
 * nondeterministic choice takes its lowest value, so no probe runs and
 * the driver plays its valid event sequence alone, concretely. Hosted
 * (tests only): never part of what EVA analyses.
 */
#ifndef EVA_NATIVE_FC_BUILTIN_H
#define EVA_NATIVE_FC_BUILTIN_H

#include <stddef.h>

/** Frama_C_interval: the low bound a (of [a, b]). */
static inline int Frama_C_interval(int a, int b)
{
    (void)b;
    return a;
}

/** Frama_C_unsigned_int_interval: the low bound a (of [a, b]). */
static inline unsigned Frama_C_unsigned_int_interval(unsigned a, unsigned b)
{
    (void)b;
    return a;
}

/** Frama_C_size_t_interval: the low bound a (of [a, b]). */
static inline size_t Frama_C_size_t_interval(size_t a, size_t b)
{
    (void)b;
    return a;
}

#endif /* EVA_NATIVE_FC_BUILTIN_H */
