/*
 * test_peers_profile.c: the system profile of sandboxed jobs and the
 * profile file format (peers/lib/pbx_peer_profile.h): every form of
 * line, their order, and every refusal with its line number.
 */
#include "../../peers/lib/pbx_peer_profile.h"
#include "../../peers/lib/pbx_peer_sandbox.h"
#include "../runner/pbx_test.h"

#include <stdio.h>
#include <string.h>

/* The forbidden directories the tests pass (a stack and a FUSE mount). */
static const char *const tp_forbidden[] = {"/home/u/.pbx/stack",
                                           "/run/user/1000/pbx-fuse"};

/* Applies the NUL-terminated text to the system profile in *p. */
static pbx_err tp_apply(pbx_peer_profile *p, const char *text,
                        pbx_peer_profile_refusal *why)
{
    pbx_peer_profile_system(p);
    return pbx_peer_profile_apply(p, (const uint8_t *)text, strlen(text),
                                  tp_forbidden, 2U, why);
}

/* p's entry for path, or NULL. */
static const pbx_peer_profile_entry *tp_find(const pbx_peer_profile *p,
                                             const char *path)
{
    for (uint32_t i = 0; i < p->n; i++) {
        if (strcmp(p->entries[i].path, path) == 0) {
            return &p->entries[i];
        }
    }
    return NULL;
}

/* Whether a and b hold the same entries, removals and proc_self. */
static bool tp_same(const pbx_peer_profile *a, const pbx_peer_profile *b)
{
    if (a->n != b->n || a->nremoved != b->nremoved ||
        a->proc_self != b->proc_self) {
        return false;
    }
    for (uint32_t i = 0; i < a->n; i++) {
        if (strcmp(a->entries[i].path, b->entries[i].path) != 0 ||
            a->entries[i].access != b->entries[i].access ||
            a->entries[i].line != b->entries[i].line) {
            return false;
        }
    }
    for (uint32_t i = 0; i < a->nremoved; i++) {
        if (strcmp(a->removed[i].path, b->removed[i].path) != 0) {
            return false;
        }
    }
    return true;
}

PBX_TEST(peers_profile_system_is_read_only_and_nothing_of_the_users)
{
    pbx_peer_profile p;
    pbx_peer_profile_system(&p);
    PBX_CHECK(p.proc_self);
    static const char *const rx[] = {"/usr", "/bin", "/lib", "/lib64"};
    for (size_t i = 0; i < sizeof(rx) / sizeof(rx[0]); i++) {
        const pbx_peer_profile_entry *at = tp_find(&p, rx[i]);
        PBX_CHECK(at != NULL && at->access == PBX_PEER_PROFILE_RX &&
                  at->line == 0U);
    }
    const pbx_peer_profile_entry *cache = tp_find(&p, "/etc/ld.so.cache");
    const pbx_peer_profile_entry *null = tp_find(&p, "/dev/null");
    PBX_CHECK(cache != NULL && cache->access == PBX_PEER_PROFILE_R);
    PBX_CHECK(null != NULL && null->access == PBX_PEER_PROFILE_RW);
    /* Only the three devices are writable; no entry is the user's, /tmp,
     * /etc as a whole or /proc. */
    for (uint32_t i = 0; i < p.n; i++) {
        const char *e = p.entries[i].path;
        PBX_CHECK(p.entries[i].access != PBX_PEER_PROFILE_RW ||
                  strncmp(e, "/dev/", 5) == 0);
        PBX_CHECK(strncmp(e, "/home", 5) != 0 && strncmp(e, "/tmp", 4) != 0 &&
                  strcmp(e, "/etc") != 0 && strncmp(e, "/proc", 5) != 0 &&
                  strcmp(e, "/") != 0);
        PBX_CHECK(pbx_peer_profile_forbidden(e, tp_forbidden, 2U) == NULL);
    }
}

PBX_TEST(peers_profile_lines_add_remove_and_apply_in_order)
{
    pbx_peer_profile p;
    pbx_peer_profile_refusal why;
    const char *text = "# my profile\n"
                       "\n"
                       "   # indented comment\n"
                       "+r /home/u/docs\n"
                       "+rx\t/opt/tool  \r\n"
                       "-/etc/passwd\n"
                       "-/usr\n"
                       "+rx /usr/bin\n"
                       "+r /opt/tool\n"
                       "-/proc/self";
    PBX_CHECK_EQ(tp_apply(&p, text, &why), PBX_OK);
    PBX_CHECK_EQ(why.line, 0U);
    const pbx_peer_profile_entry *docs = tp_find(&p, "/home/u/docs");
    PBX_CHECK(docs != NULL && docs->access == PBX_PEER_PROFILE_R &&
              docs->line == 4U);
    /* A later line for the same path changes it (no second entry). */
    const pbx_peer_profile_entry *tool = tp_find(&p, "/opt/tool");
    PBX_CHECK(tool != NULL && tool->access == PBX_PEER_PROFILE_R &&
              tool->line == 9U);
    PBX_CHECK(tp_find(&p, "/etc/passwd") == NULL);
    PBX_CHECK(tp_find(&p, "/usr") == NULL);
    PBX_CHECK(tp_find(&p, "/usr/bin") != NULL);
    PBX_CHECK(!p.proc_self);
    /* Resolved paths: /bin's target /usr/bin is removed for the system
     * entry (line 0), kept for the entry added back on line 8. */
    PBX_CHECK(pbx_peer_profile_removed(&p, "/usr/bin", 0U));
    PBX_CHECK(!pbx_peer_profile_removed(&p, "/usr/bin", 8U));
    PBX_CHECK(!pbx_peer_profile_removed(&p, "/usrx", 0U));
    PBX_CHECK(!pbx_peer_profile_removed(&p, "/lib", 0U));
    /* An empty file changes nothing. */
    PBX_CHECK_EQ(tp_apply(&p, "", &why), PBX_OK);
    pbx_peer_profile sys;
    pbx_peer_profile_system(&sys);
    PBX_CHECK(tp_same(&p, &sys));
}

PBX_TEST(peers_profile_refuses_every_bad_line_with_its_number)
{
    static const struct {
        const char *text;
        uint32_t line;
        const char *why; /* a word of the sentence */
    } bad[] = {
        {"+w /home/u\n", 1U, "not a line"},
        {"# ok\nallow /home/u\n", 2U, "not a line"},
        {"+rw /dev/tty\n", 1U, "take a blank"},
        {"+r\n", 1U, "take a blank"},
        {"+r \n", 1U, "take a blank"},
        {"+r home/u\n", 1U, "absolute"},
        {"+r /home//u\n", 1U, "plain"},
        {"+r /home/./u\n", 1U, "plain"},
        {"+r /home/u/..\n", 1U, "plain"},
        {"+r /home/u/\n", 1U, "plain"},
        {"+r /home/\x01u\n", 1U, "control"},
        {"-usr\n", 1U, "absolute"},
        {"\n\n+r /home/u/.pbx/stack\n", 3U, "stack directory"},
        {"+r /home/u/.pbx/stack/public.sock\n", 1U, "stack directory"},
        {"+r /home/u\n", 1U, "stack directory"},
        {"+r /\n", 1U, "/proc"},
        {"+rx /run/user/1000/pbx-fuse/1\n", 1U, "FUSE mount"},
        {"+r /proc/self\n", 1U, "/proc"},
        {"+r /proc/1/environ\n", 1U, "/proc"},
        {"+r /proc\n", 1U, "/proc"},
        {"-/usr/share\n", 1U, "beneath"},
        {"+r /opt\n-/opt/secret\n", 2U, "beneath"},
        {"-/opt/secret\n+r /opt\n", 1U, "beneath"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        pbx_peer_profile p;
        pbx_peer_profile sys;
        pbx_peer_profile_refusal why;
        pbx_peer_profile_system(&sys);
        PBX_CHECK_EQ(tp_apply(&p, bad[i].text, &why), PBX_E_PEER_PROFILE);
        PBX_CHECK_EQ(why.line, bad[i].line);
        PBX_REQUIRE(why.why != NULL);
        PBX_CHECK(strstr(why.why, bad[i].why) != NULL);
        /* A refused profile leaves the one it was applied to as it was. */
        PBX_CHECK(tp_same(&p, &sys));
    }
}

PBX_TEST(peers_profile_refuses_files_past_its_bounds)
{
    pbx_peer_profile p;
    pbx_peer_profile_refusal why;
    static char text[PBX_PEER_PROFILE_BYTES + 2U];
    /* A NUL byte, and one byte over the size bound. */
    pbx_peer_profile_system(&p);
    PBX_CHECK_EQ(pbx_peer_profile_apply(&p, (const uint8_t *)"+r /a\0", 6U,
                                        tp_forbidden, 2U, &why),
                 PBX_E_PEER_PROFILE);
    PBX_CHECK_EQ(why.line, 0U);
    memset(text, '\n', sizeof(text));
    PBX_CHECK_EQ(pbx_peer_profile_apply(&p, (const uint8_t *)text,
                                        PBX_PEER_PROFILE_BYTES + 1U,
                                        tp_forbidden, 2U, &why),
                 PBX_E_PEER_PROFILE);
    /* 513 blank lines: the 513th is refused; 512 pass. */
    PBX_CHECK_EQ(pbx_peer_profile_apply(&p, (const uint8_t *)text, 513U,
                                        tp_forbidden, 2U, &why),
                 PBX_E_PEER_PROFILE);
    PBX_CHECK_EQ(why.line, 513U);
    PBX_CHECK_EQ(pbx_peer_profile_apply(&p, (const uint8_t *)text, 512U,
                                        tp_forbidden, 2U, &why),
                 PBX_OK);
    /* More entries than the bound: the line that overflows is named. */
    size_t off = 0;
    uint32_t base = p.n;
    for (uint32_t i = 0; i + base <= PBX_PEER_PROFILE_ENTRIES; i++) {
        off += (size_t)snprintf(text + off, sizeof(text) - off, "+r /o/%u\n",
                                (unsigned)i);
    }
    PBX_CHECK_EQ(pbx_peer_profile_apply(&p, (const uint8_t *)text, off,
                                        tp_forbidden, 2U, &why),
                 PBX_E_PEER_PROFILE);
    PBX_CHECK_EQ(why.line, PBX_PEER_PROFILE_ENTRIES - base + 1U);
    PBX_CHECK(strstr(why.why, "entries") != NULL);
}

PBX_TEST(peers_profile_rights_fit_files_and_directories)
{
    const uint64_t all = 0xFFFFU;
    const uint64_t rd = PBX_PEER_LL_FS_READ_FILE | (1ULL << 3);
    PBX_CHECK_EQ(pbx_peer_profile_rights(PBX_PEER_PROFILE_R, true, all), rd);
    PBX_CHECK_EQ(pbx_peer_profile_rights(PBX_PEER_PROFILE_RX, true, all),
                 rd | PBX_PEER_LL_FS_EXECUTE);
    /* A file's rule drops READ_DIR (the kernel refuses it on a file). */
    PBX_CHECK_EQ(pbx_peer_profile_rights(PBX_PEER_PROFILE_R, false, all),
                 PBX_PEER_LL_FS_READ_FILE);
    PBX_CHECK_EQ(pbx_peer_profile_rights(PBX_PEER_PROFILE_RW, false, all),
                 PBX_PEER_LL_FS_READ_FILE | (1ULL << 1) |
                     PBX_PEER_LL_FS_TRUNCATE);
    /* ABI 1 does not handle TRUNCATE: a rule may not carry it. */
    PBX_CHECK_EQ(pbx_peer_profile_rights(PBX_PEER_PROFILE_RW, false,
                                         PBX_PEER_LL_FS_ABI1),
                 PBX_PEER_LL_FS_READ_FILE | (1ULL << 1));
    /* Nothing else: no write of a directory tree, no REFER, no IOCTL_DEV. */
    PBX_CHECK_EQ(pbx_peer_profile_rights(PBX_PEER_PROFILE_RX, true, all) &
                     ~(rd | PBX_PEER_LL_FS_EXECUTE),
                 0U);
    PBX_CHECK(pbx_peer_profile_forbidden("/home/u/.pbx", tp_forbidden, 2U) !=
              NULL);
    PBX_CHECK(pbx_peer_profile_forbidden("/home/u/.pbxx", tp_forbidden, 2U) ==
              NULL);
    PBX_CHECK(pbx_peer_profile_forbidden("/procfs", tp_forbidden, 2U) == NULL);
}
