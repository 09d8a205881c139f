/*
 * test_peers_tty_grants.c: the user's view of grants on fixed text: a row
 * of ttyd's query socket split into its fields (and malformed rows
 * refused), the stack log's event lines split, each grant end judged with
 * who ended it (a user's cancel found in either order), and the
 * USER_CANCEL codec of launchd's control socket, refusals included.
 */
#include "../../peers/lib/pbx_peer.h"
#include "../../peers/lib/pbx_peer_admin.h"
#include "../../peers/lib/pbx_peer_grants.h"
#include "../../sha2/pbx_sha2.h"
#include "../runner/pbx_test.h"

#include <stdio.h>
#include <string.h>

/* The 64 hex digits of "docs/a"'s SHA-256 would do as well as any: the
 * row parser only checks their form. */
static const char tg_digest[] = " digest 0123456789abcdef0123456789abcdef"
                                "0123456789abcdef0123456789abcdef";

/* Whether head, with tg_digest appended, parses as a row into *r. */
static bool tg_row(const char *head, pbx_peer_grants_row *r)
{
    char line[512];
    (void)snprintf(line, sizeof(line), "%s%s\n", head, tg_digest);
    return pbx_peer_grants_row_parse(line, r);
}

PBX_TEST(peers_tty_grants_row_parse)
{
    static pbx_peer_grants_row r;
    static const char head[] =
        "grant 3.1 read file object 77.2 job 11 slot 21 job-gen 1 lifetime "
        "job since 1700000000123 request 4.9 selector my\\x20docs/a label "
        "readme program bin/my cat";
    PBX_REQUIRE(tg_row(head, &r));
    PBX_CHECK(strcmp(r.grant, "3.1") == 0 && strcmp(r.op, "read") == 0 &&
              strcmp(r.cls, "file") == 0 && strcmp(r.object, "77.2") == 0 &&
              strcmp(r.job, "11") == 0 && strcmp(r.slot, "21") == 0 &&
              strcmp(r.job_gen, "1") == 0 && strcmp(r.lifetime, "job") == 0);
    PBX_CHECK(strcmp(r.request, "4.9") == 0 &&
              strcmp(r.selector, "my\\x20docs/a") == 0 &&
              strcmp(r.label, "readme") == 0);
    /* The entry is the rest of the line up to the digest, blanks kept. */
    PBX_CHECK(strcmp(r.program, "bin/my cat") == 0);
    PBX_CHECK(strcmp(r.digest, tg_digest + 8) == 0);
    PBX_CHECK_EQ(r.since_ms, 1700000000123ULL);
    /* Refused: no digest at the end (a row of an older ttyd), a digest
     * one digit short, one not hex. */
    char line[512];
    (void)snprintf(line, sizeof(line), "%s%s", head, tg_digest);
    PBX_CHECK(pbx_peer_grants_row_parse(line, &r));
    line[strlen(line) - 1U] = 'g';
    PBX_CHECK(!pbx_peer_grants_row_parse(line, &r));
    line[strlen(line) - 1U] = '\0';
    PBX_CHECK(!pbx_peer_grants_row_parse(line, &r));
    PBX_CHECK(!pbx_peer_grants_row_parse(head, &r));
    /* Refused: the old view-file line, a word out of place, a bad time,
     * no program (the digest right after the keyword). */
    PBX_CHECK(!tg_row(
        "grant 3.1 read file object 77.2 job 11 slot 21 program x", &r));
    PBX_CHECK(!tg_row(
        "grant 3.1 read file object 77.2 job 11 slot 21 job-gen 1 since 5 "
        "lifetime job request - selector - label - program x",
        &r));
    PBX_CHECK(!tg_row(
        "grant 3.1 read file object 77.2 job 11 slot 21 job-gen 1 lifetime "
        "job since 5x request - selector - label - program x",
        &r));
    PBX_CHECK(tg_row(
        "grant 3.1 read file object 77.2 job 11 slot 21 job-gen 1 lifetime "
        "job since 5 request - selector - label - program x",
        &r));
    PBX_CHECK(!tg_row(
        "grant 3.1 read file object 77.2 job 11 slot 21 job-gen 1 lifetime "
        "job since 5 request - selector - label - program",
        &r));
    PBX_CHECK(!pbx_peer_grants_row_parse("", &r));
}

/* Judges line with audit a; returns the phrase ("" when not an end). */
static const char *tg_end(const pbx_peer_grants_audit *a, const char *line,
                          const char **by)
{
    static pbx_peer_grants_event e;
    *by = "?";
    if (!pbx_peer_grants_event_parse(line, &e)) {
        return "";
    }
    const char *how = pbx_peer_grants_ended(a, &e, by);
    return how != NULL ? how : "";
}

PBX_TEST(peers_tty_grants_log_judged)
{
    /* powerboxd's end comes first: the order must not matter. */
    static const char end_line[] =
        "2025-01-01T00:00:01.000Z powerboxd[2]: event=grant-end grant=3:1 "
        "request=4:9 job=11:1 entry=bin/cat op=read object=docs/a "
        "lifetime=job end=cancelled reason=none";
    static const char user_line[] =
        "2025-01-01T00:00:01.000Z launchd[3]: launchd: event=user-cancel "
        "request=4:9 grant=3:1";
    static const char *const lines[] = {
        end_line,
        user_line,
        "event=grant-end grant=5:1 end=cancelled reason=none",
        "event=grant-end grant=3:2 end=cancelled reason=none",
        "x: event=grant-end grant=6:1 end=consumed reason=none",
        "x: event=grant-end grant=7:1 end=expired reason=job",
        "x: event=grant-end grant=8:1 end=revoked reason=provider-lost",
        "x: event=grant-end grant=9:1 end=revoked reason=installer-lost",
        "x: event=grant-end grant=10:1 end=revoked reason=none",
        "x: event=decision request=4:9 outcome=approved",
        "x: ready, no event here",
        "x: event=grant-end grant=11:1 end=lost reason=provider-lost",
        "x: event=grant-end grant=12:1 end=lost reason=installer-lost",
    };
    static pbx_peer_grants_audit a;
    static pbx_peer_grants_event e;
    pbx_peer_grants_audit_init(&a);
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        if (pbx_peer_grants_event_parse(lines[i], &e)) {
            pbx_peer_grants_audit_note(&a, &e);
        }
    }
    PBX_CHECK_EQ(a.count, 1U);
    PBX_REQUIRE(pbx_peer_grants_event_parse(lines[0], &e));
    PBX_CHECK(strcmp(e.time, "2025-01-01T00:00:01.000Z") == 0);
    PBX_CHECK(strcmp(pbx_peer_grants_get(&e, "object"), "docs/a") == 0);
    PBX_CHECK(strcmp(pbx_peer_grants_get(&e, "absent"), "-") == 0);
    const char *by = NULL;
    PBX_CHECK(strcmp(tg_end(&a, lines[0], &by), "cancelled by the user") == 0);
    PBX_CHECK(strcmp(by, "user") == 0);
    PBX_CHECK(strcmp(tg_end(&a, lines[1], &by), "") == 0);
    PBX_CHECK(strcmp(tg_end(&a, lines[2], &by), "cancelled by the program") ==
              0);
    /* Another generation of the same index is another grant. */
    PBX_CHECK(strcmp(tg_end(&a, lines[3], &by), "cancelled by the program") ==
              0);
    PBX_CHECK(strcmp(tg_end(&a, lines[4], &by), "consumed by the program") ==
              0);
    PBX_CHECK(strcmp(tg_end(&a, lines[5], &by),
                     "expired (its job or invocation ended)") == 0);
    PBX_CHECK(strcmp(tg_end(&a, lines[6], &by),
                     "revoked: its provider (vfsd) was lost") == 0 &&
              strcmp(by, "vfsd-lost") == 0);
    PBX_CHECK(strcmp(tg_end(&a, lines[7], &by),
                     "revoked: its installer (procd) was lost") == 0 &&
              strcmp(by, "procd-lost") == 0);
    PBX_CHECK(strcmp(tg_end(&a, lines[8], &by), "revoked") == 0);
    PBX_CHECK(strcmp(tg_end(&a, lines[9], &by), "") == 0);
    PBX_CHECK(!pbx_peer_grants_event_parse(lines[10], &e));
    /* powerboxd's own word for a route loss's end (pbx_core_inspect.c). */
    PBX_CHECK(strcmp(tg_end(&a, lines[11], &by),
                     "revoked: its provider (vfsd) was lost") == 0 &&
              strcmp(by, "vfsd-lost") == 0);
    PBX_CHECK(strcmp(tg_end(&a, lines[12], &by),
                     "revoked: its installer (procd) was lost") == 0 &&
              strcmp(by, "procd-lost") == 0);
}

PBX_TEST(peers_tty_grants_user_cancel_codec)
{
    uint8_t buf[PBX_IPC_HEADER_BYTES + PBX_PEER_USER_CANCEL_REPLY_BYTES + 4U];
    size_t n = 0;
    pbx_ipc_id g = {7, 3};
    pbx_ipc_id got = {0, 0};
    uint32_t seq = 0;
    PBX_CHECK_EQ(pbx_peer_user_cancel_encode((pbx_ipc_id){7, 0}, 1U, buf,
                                             sizeof(buf), &n),
                 PBX_E_IPC_GENERATION);
    PBX_CHECK_EQ(pbx_peer_user_cancel_encode(g, 1U, buf, 8U, &n),
                 PBX_E_IPC_NO_SPACE);
    PBX_REQUIRE(pbx_peer_user_cancel_encode(g, 42U, buf, sizeof(buf), &n) ==
                PBX_OK);
    PBX_CHECK_EQ(pbx_peer_admin_op(buf, n), PBX_PEER_OP_USER_CANCEL);
    PBX_CHECK_EQ(pbx_peer_admin_op(buf, n - 1U), 0U);
    PBX_CHECK_EQ(pbx_peer_user_cancel_decode(buf, n, 0U, &got, &seq), PBX_OK);
    PBX_CHECK(got.index == 7U && got.gen == 3U && seq == 42U);
    /* Refusals: a descriptor, a trailing byte, a status, reserved bits. */
    PBX_CHECK_EQ(pbx_peer_user_cancel_decode(buf, n, 1U, &got, &seq),
                 PBX_E_IPC_CAP_COUNT);
    PBX_CHECK_EQ(pbx_peer_user_cancel_decode(buf, n + 1U, 0U, &got, &seq),
                 PBX_E_IPC_BODY_LEN);
    buf[8] = 1;
    PBX_CHECK_EQ(pbx_peer_user_cancel_decode(buf, n, 0U, &got, &seq),
                 PBX_E_IPC_STATUS);
    buf[8] = 0;
    buf[28] = 1;
    PBX_CHECK_EQ(pbx_peer_user_cancel_decode(buf, n, 0U, &got, &seq),
                 PBX_E_IPC_RESERVED);
    buf[28] = 0;
    buf[16] = buf[17] = buf[18] = buf[19] = 0; /* generation zero */
    PBX_CHECK_EQ(pbx_peer_user_cancel_decode(buf, n, 0U, &got, &seq),
                 PBX_E_IPC_GENERATION);
    /* Replies: accepted with the request, refused without a body. */
    pbx_peer_user_cancel_reply rep = {g, 0U, {4, 9}};
    pbx_peer_user_cancel_reply back;
    PBX_REQUIRE(pbx_peer_user_cancel_reply_encode(&rep, 42U, buf, sizeof(buf),
                                                  &n) == PBX_OK);
    PBX_CHECK_EQ(n, PBX_IPC_HEADER_BYTES + PBX_PEER_USER_CANCEL_REPLY_BYTES);
    PBX_CHECK_EQ(pbx_peer_user_cancel_reply_decode(buf, n, 0U, &back), PBX_OK);
    PBX_CHECK(back.status == 0U && back.request.index == 4U &&
              back.request.gen == 9U && back.grant.gen == 3U);
    rep.status = (uint16_t)PBX_E_PEER_BUSY;
    PBX_REQUIRE(pbx_peer_user_cancel_reply_encode(&rep, 42U, buf, sizeof(buf),
                                                  &n) == PBX_OK);
    PBX_CHECK_EQ(n, PBX_IPC_HEADER_BYTES);
    PBX_CHECK_EQ(pbx_peer_user_cancel_reply_decode(buf, n, 0U, &back), PBX_OK);
    PBX_CHECK(back.status == (uint16_t)PBX_E_PEER_BUSY &&
              back.request.gen == 0U);
    /* A request is not a reply. */
    PBX_REQUIRE(pbx_peer_user_cancel_encode(g, 1U, buf, sizeof(buf), &n) ==
                PBX_OK);
    PBX_CHECK_EQ(pbx_peer_user_cancel_reply_decode(buf, n, 0U, &back),
                 PBX_E_IPC_OP_MISMATCH);
}

/* Writes the row of grant g (no prompt unless shown is given: the
 * selector ttyd lists, escaped) whose selector digest is that of sel[0..n)
 * into line and parses it into *r and *o. */
static bool tg_grant(const char *g, const char *shown, const uint8_t *sel,
                     size_t n, pbx_peer_grants_row *r,
                     pbx_peer_grants_object *o)
{
    uint8_t d[PBX_SHA2_DIGEST_BYTES];
    char hex[2U * PBX_SHA2_DIGEST_BYTES + 1U];
    static char line[1024];
    if (pbx_sha2_digest(sel, n, d) != PBX_OK) {
        return false;
    }
    for (size_t i = 0; i < sizeof(d); i++) {
        (void)snprintf(hex + 2U * i, 3U, "%02x", (unsigned)d[i]);
    }
    (void)snprintf(line, sizeof(line),
                   "grant %s read file object 77.2 job 81 slot 61 job-gen 1 "
                   "lifetime job since 5 request - selector %s label doc61 "
                   "program bin/grants demo digest %s\n",
                   g, shown, hex);
    return pbx_peer_grants_row_parse(line, r) &&
           pbx_peer_grants_object_init(o, r);
}

/* Feeds every line of log to objs[0..n); returns how many it filled. */
static size_t tg_feed(pbx_peer_grants_object *objs, size_t n,
                      const char *const *log, size_t lines)
{
    static pbx_peer_grants_event e;
    size_t filled = 0;
    for (size_t i = 0; i < lines; i++) {
        if (pbx_peer_grants_event_parse(log[i], &e)) {
            filled += pbx_peer_grants_object_match(objs, n, &e);
        }
    }
    return filled;
}

PBX_TEST(peers_tty_grants_exact_object_by_digest)
{
    /* A selector longer than the log shows: cut at 256 bytes with "...". */
    static uint8_t longsel[300];
    static char cut[400];
    memset(longsel, 'a', sizeof(longsel));
    (void)snprintf(cut, sizeof(cut),
                   "t powerboxd[2]: powerboxd: event=decision request=5:1 "
                   "job=81:1 entry=x op=read object=%.256s... "
                   "lifetime=job outcome=approved reason=policy",
                   (const char *)longsel);
    const char *const log[] = {
        "2026-01-01T00:00:00.000Z powerboxd[2]: powerboxd: event=decision "
        "request=1:1 job=81:1 entry=bin/grants%20demo op=read "
        "object=docs/readme.txt lifetime=job outcome=approved reason=policy",
        "2026-01-01T00:00:00.001Z powerboxd[2]: powerboxd: event=decision "
        "request=2:1 job=81:1 entry=x op=read object=my%20notes%3Dv1.txt "
        "lifetime=job outcome=approved reason=policy",
        /* Another selector (a digest mismatch), and the right one on an
         * end line, which is not a decision. */
        "t powerboxd[2]: event=decision request=3:1 object=docs/secret.tx "
        "outcome=approved",
        "t powerboxd[2]: event=grant-end grant=4:1 object=docs/secret.txt "
        "end=consumed",
        /* A bad escape names nothing. */
        "t powerboxd[2]: event=decision request=6:1 object=docs/secret.txt%2",
        cut,
    };
    static pbx_peer_grants_row r[5];
    static pbx_peer_grants_object o[5];
    static const char readme[] = "docs/readme.txt";
    static const char notes[] = "my notes=v1.txt";
    static const char secret[] = "docs/secret.txt";
    PBX_REQUIRE(tg_grant("1.1", "-", (const uint8_t *)readme,
                         sizeof(readme) - 1U, &r[0], &o[0]));
    PBX_REQUIRE(tg_grant("2.1", "-", (const uint8_t *)notes, sizeof(notes) - 1U,
                         &r[1], &o[1]));
    PBX_REQUIRE(tg_grant("3.1", "-", (const uint8_t *)secret,
                         sizeof(secret) - 1U, &r[2], &o[2]));
    PBX_REQUIRE(tg_grant("5.1", "-", longsel, sizeof(longsel), &r[3], &o[3]));
    /* A prompted grant: the selector the user saw hashes to the digest. */
    PBX_REQUIRE(tg_grant("7.1", "my\\x20notes=v1.txt", (const uint8_t *)notes,
                         sizeof(notes) - 1U, &r[4], &o[4]));
    PBX_CHECK_EQ(tg_feed(o, 5U, log, sizeof(log) / sizeof(log[0])), 3U);
    PBX_CHECK(o[0].found && o[1].found && !o[2].found && !o[3].found &&
              o[4].found);
    static char text[PBX_PEER_TTY_ROW_BYTES_MAX];
    const char *from =
        pbx_peer_grants_object_text(&r[0], &o[0], text, sizeof(text));
    PBX_CHECK(from != NULL && strcmp(from, "log") == 0 &&
              strcmp(text, "docs/readme.txt") == 0);
    /* %20 and %3D unescaped, then written as ttyd writes a selector. */
    from = pbx_peer_grants_object_text(&r[1], &o[1], text, sizeof(text));
    PBX_CHECK(from != NULL && strcmp(from, "log") == 0 &&
              strcmp(text, "my\\x20notes=v1.txt") == 0);
    /* No matching decision, a cut selector: the digest, never the label. */
    for (size_t i = 2; i < 4; i++) {
        from = pbx_peer_grants_object_text(&r[i], &o[i], text, sizeof(text));
        PBX_CHECK(from != NULL && strcmp(from, "digest") == 0 &&
                  strncmp(text, "sha256:", 7) == 0 &&
                  strcmp(text + 7, r[i].digest) == 0);
    }
    from = pbx_peer_grants_object_text(&r[4], &o[4], text, sizeof(text));
    PBX_CHECK(from != NULL && strcmp(from, "prompt") == 0 &&
              strcmp(text, "my\\x20notes=v1.txt") == 0);
    /* A shown selector that does not hash to the digest is not taken. */
    PBX_REQUIRE(tg_grant("8.1", "docs/readme.txt", (const uint8_t *)secret,
                         sizeof(secret) - 1U, &r[0], &o[0]));
    from = pbx_peer_grants_object_text(&r[0], &o[0], text, sizeof(text));
    PBX_CHECK(from != NULL && strcmp(from, "digest") == 0);
    PBX_CHECK(pbx_peer_grants_object_text(&r[0], &o[0], text, 10U) == NULL);
}

PBX_TEST(peers_tty_grants_end_lines)
{
    /* The text `pbx log` prints for a user's cancel (launchd's line after
     * powerboxd's end), a cancel by the program, and a consume. */
    const char *const log[] = {
        "2026-01-01T00:00:00.000Z powerboxd[2]: powerboxd: event=grant-end "
        "grant=3:1 request=1:1 job=81:1 entry=bin/grants-demo op=read "
        "object=docs/readme.txt lifetime=job end=cancelled reason=cancel",
        "2026-01-01T00:00:00.001Z launchd[1]: launchd: event=user-cancel "
        "request=1:1 grant=3:1",
        "2026-01-01T00:00:00.002Z powerboxd[2]: powerboxd: event=grant-end "
        "grant=90:1 request=91:1 job=12:1 entry=bin/other op=read "
        "object=my%20notes.txt lifetime=one-shot end=cancelled reason=cancel",
        "2026-01-01T00:00:00.003Z powerboxd[2]: powerboxd: event=grant-end "
        "grant=92:1 request=93:1 job=12:1 entry=bin/other op=read "
        "object=docs/readme.txt lifetime=one-shot end=consumed "
        "reason=consume",
    };
    static pbx_peer_grants_audit a;
    static pbx_peer_grants_event e;
    static char out[PBX_PEER_GRANTS_LINE_MAX];
    pbx_peer_grants_audit_init(&a);
    for (size_t i = 0; i < 4; i++) {
        PBX_REQUIRE(pbx_peer_grants_event_parse(log[i], &e));
        pbx_peer_grants_audit_note(&a, &e);
    }
    PBX_REQUIRE(pbx_peer_grants_event_parse(log[0], &e));
    PBX_CHECK(pbx_peer_grants_end_line(&a, &e, false, out, sizeof(out)));
    PBX_CHECK(strcmp(out, "2026-01-01T00:00:00.000Z grant 3.1 "
                          "(bin/grants-demo, job 81:1, read docs/readme.txt, "
                          "job): cancelled by the user") == 0);
    PBX_CHECK(pbx_peer_grants_end_line(&a, &e, true, out, sizeof(out)));
    PBX_CHECK(strcmp(out, "time=2026-01-01T00:00:00.000Z grant=3:1 "
                          "request=1:1 job=81:1 entry=bin/grants-demo op=read "
                          "object=docs/readme.txt lifetime=job end=cancelled "
                          "by=user reason=cancel") == 0);
    PBX_REQUIRE(pbx_peer_grants_event_parse(log[1], &e));
    PBX_CHECK(!pbx_peer_grants_end_line(&a, &e, false, out, sizeof(out)));
    PBX_CHECK(strcmp(out, "") == 0);
    PBX_REQUIRE(pbx_peer_grants_event_parse(log[2], &e));
    PBX_CHECK(pbx_peer_grants_end_line(&a, &e, false, out, sizeof(out)));
    PBX_CHECK(strcmp(out, "2026-01-01T00:00:00.002Z grant 90.1 (bin/other, "
                          "job 12:1, read my%20notes.txt, one-shot): "
                          "cancelled by the program") == 0);
    PBX_CHECK(pbx_peer_grants_end_line(&a, &e, true, out, sizeof(out)) &&
              strstr(out, " by=program ") != NULL);
    PBX_REQUIRE(pbx_peer_grants_event_parse(log[3], &e));
    PBX_CHECK(pbx_peer_grants_end_line(&a, &e, false, out, sizeof(out)) &&
              strstr(out, "): consumed by the program") != NULL);
    /* Cut to fit, still terminated. */
    PBX_CHECK(pbx_peer_grants_end_line(&a, &e, false, out, 8U) &&
              strlen(out) == 7U);
}
