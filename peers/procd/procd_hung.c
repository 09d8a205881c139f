/*
 * procd_hung.c: the list of install rows whose revocation handle hung up
 * and that wait out their grace (procd.c's sweep), kept so that neither
 * a sweep nor an INSTALL walks the install table (issue 23 item 3), and
 * the debug cross-check of every index procd keeps (PBX_PROCD_CHECK_INDEX,
 * set by make peers-test and the e2e runner).
 */
#include "peers/procd/procd.h"

void procd_hang(size_t row, uint64_t until_ms)
{
    PBX_ASSERT(row < g_procd.tab.cap && until_ms != 0U);
    if (g_procd.hung_ms[row] == 0U) {
        g_procd.hung_pos[row] = (uint16_t)g_procd.nhung;
        g_procd.hung[g_procd.nhung++] = (uint16_t)row;
    }
    g_procd.hung_ms[row] = until_ms;
}

void procd_unhang(size_t row)
{
    if (row >= g_procd.tab.cap || g_procd.hung_ms[row] == 0U) {
        return;
    }
    /* The last hung row takes row's place. */
    size_t at = g_procd.hung_pos[row];
    uint16_t last = g_procd.hung[--g_procd.nhung];
    g_procd.hung[at] = last;
    g_procd.hung_pos[last] = (uint16_t)at;
    g_procd.hung_ms[row] = 0U;
}

/* Checks the hung list: exactly the live rows with a hang-up time, each
 * once, each knowing its place. */
static const char *procd_hung_check(void)
{
    size_t hung = 0;
    for (size_t row = 0; row < g_procd.tab.cap; row++) {
        if (g_procd.hung_ms[row] == 0U) {
            continue;
        }
        hung++;
        size_t at = g_procd.hung_pos[row];
        if (!g_procd.tab.rows[row].live || at >= g_procd.nhung ||
            g_procd.hung[at] != row) {
            return "hung list misses a hung row, or a hung row is not live";
        }
    }
    return hung == g_procd.nhung ? NULL : "hung list holds a row not hung up";
}

const char *procd_index_check(void)
{
    const char *why = pbx_peer_procix_check(&g_procd.tab);
    return why != NULL ? why : procd_hung_check();
}
