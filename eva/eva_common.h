/*
 * eva_common.h: what the core's EVA drivers (eva/eva_core.c and
 * eva/eva_live.c) share: the small geometry both analyse the core over.
 * eva/eva.py reads eva/eva_common.c with each of those drivers and the
 * live driver's native build links it (make eva, make eva-live).
 */
#ifndef EVA_COMMON_H
#define EVA_COMMON_H

#include "base/pbx_base.h"
#include "bootstrap/pbx_bootstrap.h"

/** EVA_RECORDS is the records of every pool in the drivers' geometry
 * (and its call window). */
#define EVA_RECORDS 2U

/**
 * eva_layout derives, into the caller's *out, the layout of the geometry
 * of EVA_RECORDS records per pool (transients, selector bytes and prompt
 * records scaled from it as the core requires, every time 5000 ms, pages
 * of 4096 bytes). Returns false when bootstrap refuses the geometry (then
 * *out is not to be used); nothing is kept after the call.
 */
bool eva_layout(pbx_bootstrap_layout *out);

#endif /* EVA_COMMON_H */
