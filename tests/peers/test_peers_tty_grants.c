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
#include "../runner/pbx_test.h"

#include <string.h>

PBX_TEST(peers_tty_grants_row_parse)
{
    static pbx_peer_grants_row r;
    const char *line = "grant 3.1 read file object 77.2 job 11 slot 21 "
                       "job-gen 1 lifetime job since 1700000000123 request "
                       "4.9 selector my\\x20docs/a label readme program "
                       "bin/my cat\n";
    PBX_REQUIRE(pbx_peer_grants_row_parse(line, &r));
    PBX_CHECK(strcmp(r.grant, "3.1") == 0 && strcmp(r.op, "read") == 0 &&
              strcmp(r.cls, "file") == 0 && strcmp(r.object, "77.2") == 0 &&
              strcmp(r.job, "11") == 0 && strcmp(r.slot, "21") == 0 &&
              strcmp(r.job_gen, "1") == 0 && strcmp(r.lifetime, "job") == 0);
    PBX_CHECK(strcmp(r.request, "4.9") == 0 &&
              strcmp(r.selector, "my\\x20docs/a") == 0 &&
              strcmp(r.label, "readme") == 0);
    /* The entry is the rest of the line, blanks kept. */
    PBX_CHECK(strcmp(r.program, "bin/my cat") == 0);
    PBX_CHECK_EQ(r.since_ms, 1700000000123ULL);
    /* Refused: the old view-file line, a word out of place, a bad time,
     * no program. */
    PBX_CHECK(!pbx_peer_grants_row_parse(
        "grant 3.1 read file object 77.2 job 11 slot 21 program x", &r));
    PBX_CHECK(!pbx_peer_grants_row_parse(
        "grant 3.1 read file object 77.2 job 11 slot 21 job-gen 1 since 5 "
        "lifetime job request - selector - label - program x",
        &r));
    PBX_CHECK(!pbx_peer_grants_row_parse(
        "grant 3.1 read file object 77.2 job 11 slot 21 job-gen 1 lifetime "
        "job since 5x request - selector - label - program x",
        &r));
    PBX_CHECK(!pbx_peer_grants_row_parse(
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
