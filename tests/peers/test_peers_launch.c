/*
 * test_peers_launch.c: launchd's local wire (LAUNCH, EXIT) and the binding
 * of a BEGIN to its job, on tables of cases without sockets.
 */
#include "../../ipc/pbx_ipc.h"
#include "../../peers/lib/pbx_peer_launch.h"
#include "../runner/pbx_test.h"

#include <string.h>

static uint8_t g_buf[PBX_IPC_FRAME_BYTES_MAX];
static uint8_t g_out[PBX_IPC_FRAME_BYTES_MAX];

/* A LAUNCH of job id:gen running "prog a b" as entry "bin/prog". */
static size_t tn_launch(uint64_t id, uint32_t gen)
{
    static pbx_peer_launch_req r;
    static const char *const args[] = {"prog", "a", "bee"};
    memset(&r, 0, sizeof(r));
    r.job_id = id;
    r.job_gen = gen;
    r.session = 7;
    r.realm = 3;
    r.entry_len = 8;
    memcpy(r.entry, "bin/prog", 8);
    r.argc = 3;
    for (uint16_t i = 0; i < 3; i++) {
        r.args[i] = (const uint8_t *)args[i];
        r.arg_lens[i] = (uint16_t)strlen(args[i]);
    }
    size_t n = 0;
    PBX_REQUIRE(pbx_peer_launch_encode(&r, g_buf, sizeof(g_buf), &n) == PBX_OK);
    return n;
}

PBX_TEST(peers_launch_round_trips_and_refuses_malformed_frames)
{
    static pbx_peer_launch_req d;
    pbx_peer_launch_frame f;
    size_t n = tn_launch(0, 0);
    PBX_CHECK_EQ(pbx_peer_launch_peek(g_buf, n, 3, &f), PBX_OK);
    PBX_CHECK_EQ(f.op, PBX_PEER_OP_LAUNCH);
    PBX_CHECK_EQ(pbx_peer_launch_decode(&f, &d), PBX_OK);
    PBX_CHECK(strcmp(d.entry, "bin/prog") == 0);
    PBX_CHECK(d.session == 7U && d.realm == 3U);
    PBX_CHECK_EQ(d.argc, 3U);
    PBX_CHECK_EQ(d.arg_lens[2], 3U);
    PBX_CHECK(memcmp(d.args[2], "bee", 3) == 0);
    /* Exactly three descriptors; an ipc op is not this codec's. */
    PBX_CHECK_EQ(pbx_peer_launch_peek(g_buf, n, 2, &f), PBX_E_IPC_CAP_COUNT);
    size_t m = 0;
    PBX_REQUIRE(pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, (pbx_ipc_id){1, 1},
                                     g_out, sizeof(g_out), &m) == PBX_OK);
    PBX_CHECK_EQ(pbx_peer_launch_peek(g_out, m, 0, &f), PBX_E_IPC_UNKNOWN_OP);
    PBX_CHECK_EQ(pbx_peer_launch_peek(g_buf, 10, 3, &f), PBX_E_IPC_TRUNCATED);
    /* A job id without a generation; an empty argument; a trailing byte;
     * a non-printable entry. */
    n = tn_launch(7, 1);
    pbx_le_put32(g_buf + PBX_IPC_HEADER_BYTES + 8, 0);
    PBX_REQUIRE(pbx_peer_launch_peek(g_buf, n, 3, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_peer_launch_decode(&f, &d), PBX_E_IPC_GENERATION);
    n = tn_launch(0, 0);
    pbx_le_put16(g_buf + n - 5, 0);
    PBX_REQUIRE(pbx_peer_launch_peek(g_buf, n, 3, &f) == PBX_OK);
    PBX_CHECK(pbx_peer_launch_decode(&f, &d) != PBX_OK);
    n = tn_launch(0, 0);
    g_buf[n] = 0;
    pbx_le_put32(g_buf + 20, (uint32_t)(n + 1U - PBX_IPC_HEADER_BYTES));
    PBX_REQUIRE(pbx_peer_launch_peek(g_buf, n + 1U, 3, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_peer_launch_decode(&f, &d), PBX_E_IPC_TRAILING);
    n = tn_launch(0, 0);
    g_buf[PBX_IPC_HEADER_BYTES + 30] = 0x07;
    PBX_REQUIRE(pbx_peer_launch_peek(g_buf, n, 3, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_peer_launch_decode(&f, &d), PBX_E_IPC_TEXT);
}

PBX_TEST(peers_launch_carries_the_sandbox_flag_and_a_scope)
{
    static pbx_peer_launch_req r;
    static pbx_peer_launch_req d;
    static const char *const arg = "prog";
    pbx_peer_launch_frame f;
    memset(&r, 0, sizeof(r));
    r.session = 1;
    r.realm = 1;
    r.entry_len = 4;
    memcpy(r.entry, "prog", 4);
    r.argc = 1;
    r.args[0] = (const uint8_t *)arg;
    r.arg_lens[0] = 4;
    size_t plain = 0;
    PBX_REQUIRE(pbx_peer_launch_encode(&r, g_buf, sizeof(g_buf), &plain) ==
                PBX_OK);
    /* No flag, no scope: no flags word, three descriptors. */
    PBX_CHECK_EQ(pbx_peer_launch_peek(g_buf, plain, 3, &f), PBX_OK);
    PBX_CHECK_EQ(pbx_peer_launch_decode(&f, &d), PBX_OK);
    PBX_CHECK(d.flags == 0U && !d.scope);
    PBX_CHECK_EQ(pbx_peer_launch_peek(g_buf, plain, 4, &f),
                 PBX_E_IPC_CAP_COUNT);
    /* Sandbox and a scope: four more bytes, four descriptors. */
    r.flags = PBX_PEER_LAUNCH_SANDBOX;
    r.scope = true;
    size_t n = 0;
    PBX_REQUIRE(pbx_peer_launch_encode(&r, g_buf, sizeof(g_buf), &n) == PBX_OK);
    PBX_CHECK_EQ(n, plain + 4U);
    PBX_CHECK_EQ(pbx_peer_launch_peek(g_buf, n, 3, &f), PBX_E_IPC_CAP_COUNT);
    PBX_REQUIRE(pbx_peer_launch_peek(g_buf, n, 4, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_peer_launch_decode(&f, &d), PBX_OK);
    PBX_CHECK(d.flags == PBX_PEER_LAUNCH_SANDBOX && d.scope);
    /* A zero flags word (a second encoding of "no flag") and an unknown
     * bit are refused; so are two or five descriptors. */
    static const uint32_t words[] = {0U, 0x100U, 0x80000000U};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        pbx_le_put32(g_buf + n - 4U, words[i]);
        PBX_REQUIRE(pbx_peer_launch_peek(g_buf, n, 4, &f) == PBX_OK);
        PBX_CHECK_EQ(pbx_peer_launch_decode(&f, &d), PBX_E_IPC_BOUND);
    }
    /* Five descriptors pass the header (a working directory may be the
     * fifth) but not the body without PBX_PEER_LAUNCH_CWD; six never. */
    pbx_le_put32(g_buf + n - 4U, PBX_PEER_LAUNCH_SANDBOX);
    pbx_le_put16(g_buf + 10, 5);
    PBX_REQUIRE(pbx_peer_launch_peek(g_buf, n, 5, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_peer_launch_decode(&f, &d), PBX_E_IPC_CAP_PARTITION);
    pbx_le_put16(g_buf + 10, 6);
    PBX_CHECK_EQ(pbx_peer_launch_peek(g_buf, n, 6, &f),
                 PBX_E_IPC_CAP_PARTITION);
    pbx_le_put16(g_buf + 10, 2);
    PBX_CHECK_EQ(pbx_peer_launch_peek(g_buf, n, 2, &f),
                 PBX_E_IPC_CAP_PARTITION);
    /* The stage flag (pbx-stage first, docs/HOST.md "Install mode on
     * the host") round-trips alone and with the sandbox flag. */
    r.flags = PBX_PEER_LAUNCH_STAGE | PBX_PEER_LAUNCH_SANDBOX;
    PBX_REQUIRE(pbx_peer_launch_encode(&r, g_buf, sizeof(g_buf), &n) == PBX_OK);
    PBX_REQUIRE(pbx_peer_launch_peek(g_buf, n, 4, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_peer_launch_decode(&f, &d), PBX_OK);
    PBX_CHECK_EQ(d.flags, PBX_PEER_LAUNCH_STAGE | PBX_PEER_LAUNCH_SANDBOX);
    /* The encoder refuses an unknown flag. */
    r.flags = 0x100U;
    PBX_CHECK_EQ(pbx_peer_launch_encode(&r, g_buf, sizeof(g_buf), &n),
                 PBX_E_IPC_BOUND);
}

PBX_TEST(peers_launch_carries_a_profile_path_after_the_flags)
{
    static pbx_peer_launch_req r;
    static pbx_peer_launch_req d;
    static const char *const arg = "cat";
    static const char *const prof = "/home/u/my.profile";
    pbx_peer_launch_frame f;
    memset(&r, 0, sizeof(r));
    r.session = 1;
    r.realm = 1;
    r.entry_len = 3;
    memcpy(r.entry, "cat", 3);
    r.argc = 1;
    r.args[0] = (const uint8_t *)arg;
    r.arg_lens[0] = 3;
    r.flags = PBX_PEER_LAUNCH_SANDBOX;
    size_t sb = 0;
    PBX_REQUIRE(pbx_peer_launch_encode(&r, g_buf, sizeof(g_buf), &sb) ==
                PBX_OK);
    /* The flag, then u16 length and the path: the last field. */
    r.flags = PBX_PEER_LAUNCH_SANDBOX | PBX_PEER_LAUNCH_PROFILE;
    r.profile = (const uint8_t *)prof;
    r.profile_len = (uint16_t)strlen(prof);
    size_t n = 0;
    PBX_REQUIRE(pbx_peer_launch_encode(&r, g_buf, sizeof(g_buf), &n) == PBX_OK);
    PBX_CHECK_EQ(n, sb + 2U + strlen(prof));
    PBX_REQUIRE(pbx_peer_launch_peek(g_buf, n, 3, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_peer_launch_decode(&f, &d), PBX_OK);
    PBX_CHECK_EQ(d.profile_len, strlen(prof));
    PBX_CHECK(memcmp(d.profile, prof, d.profile_len) == 0);
    /* Without the sandbox flag, empty, relative, with a NUL, cut short,
     * or followed by a byte: refused. */
    size_t at = n - strlen(prof);
    pbx_le_put32(g_buf + at - 6U, PBX_PEER_LAUNCH_PROFILE);
    PBX_REQUIRE(pbx_peer_launch_peek(g_buf, n, 3, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_peer_launch_decode(&f, &d), PBX_E_IPC_BOUND);
    pbx_le_put32(g_buf + at - 6U, r.flags);
    g_buf[at] = 'h';
    PBX_REQUIRE(pbx_peer_launch_peek(g_buf, n, 3, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_peer_launch_decode(&f, &d), PBX_E_IPC_TEXT);
    g_buf[at] = '/';
    g_buf[at + 3U] = 0;
    PBX_REQUIRE(pbx_peer_launch_peek(g_buf, n, 3, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_peer_launch_decode(&f, &d), PBX_E_IPC_TEXT);
    g_buf[at + 3U] = 'm';
    pbx_le_put16(g_buf + at - 2U, 0);
    PBX_REQUIRE(pbx_peer_launch_peek(g_buf, n, 3, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_peer_launch_decode(&f, &d), PBX_E_IPC_BOUND);
    pbx_le_put16(g_buf + at - 2U, (uint16_t)(strlen(prof) + 1U));
    PBX_REQUIRE(pbx_peer_launch_peek(g_buf, n, 3, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_peer_launch_decode(&f, &d), PBX_E_IPC_TRUNCATED);
    pbx_le_put16(g_buf + at - 2U, (uint16_t)(strlen(prof) - 1U));
    PBX_REQUIRE(pbx_peer_launch_peek(g_buf, n, 3, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_peer_launch_decode(&f, &d), PBX_E_IPC_TRAILING);
    /* The encoder refuses the flag without a path. */
    r.profile_len = 0U;
    PBX_CHECK_EQ(pbx_peer_launch_encode(&r, g_buf, sizeof(g_buf), &n),
                 PBX_E_IPC_BOUND);
}

PBX_TEST(peers_launch_session_and_realm_are_the_jobs_own)
{
    static pbx_peer_launch_req d;
    pbx_peer_launch_frame f;
    /* Body: job id (8), generation (4), session (8) at 12, realm (8) at
     * 20. A job's session and realm are nonzero (zero in a BEGIN means
     * "the job's"), and BEGIN's realm has 32 bits. */
    static const struct {
        uint64_t session;
        uint64_t realm;
        pbx_err want;
    } cases[] = {
        {7, 3, PBX_OK},
        {0, 3, PBX_E_IPC_BOUND},
        {7, 0, PBX_E_IPC_BOUND},
        {7, 0x100000000ULL, PBX_E_IPC_BOUND},
        {UINT64_MAX, UINT32_MAX, PBX_OK},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t n = tn_launch(0, 0);
        pbx_le_put64(g_buf + PBX_IPC_HEADER_BYTES + 12, cases[i].session);
        pbx_le_put64(g_buf + PBX_IPC_HEADER_BYTES + 20, cases[i].realm);
        PBX_REQUIRE(pbx_peer_launch_peek(g_buf, n, 3, &f) == PBX_OK);
        PBX_CHECK_EQ(pbx_peer_launch_decode(&f, &d), cases[i].want);
        if (cases[i].want == PBX_OK) {
            PBX_CHECK(d.session == cases[i].session &&
                      d.realm == cases[i].realm);
        }
    }
    /* The encoder refuses what the decoder would. */
    static pbx_peer_launch_req r;
    static const char *const arg = "prog";
    memset(&r, 0, sizeof(r));
    r.session = 0;
    r.realm = 1;
    r.entry_len = 1;
    r.entry[0] = 'p';
    r.argc = 1;
    r.args[0] = (const uint8_t *)arg;
    r.arg_lens[0] = 4;
    size_t m = 0;
    PBX_CHECK_EQ(pbx_peer_launch_encode(&r, g_buf, sizeof(g_buf), &m),
                 PBX_E_IPC_BOUND);
}

PBX_TEST(peers_launch_reply_and_exit_round_trip)
{
    pbx_peer_launch_reply r = {11, 1, 4242, 42, 5};
    pbx_peer_launch_reply d;
    pbx_peer_launch_frame f;
    size_t n = 0;
    PBX_REQUIRE(pbx_peer_launch_reply_encode(0, &r, 9, g_buf, sizeof(g_buf),
                                             &n) == PBX_OK);
    PBX_CHECK_EQ(pbx_peer_launch_peek(g_buf, n, 0, &f), PBX_OK);
    PBX_CHECK_EQ(f.seq, 9U);
    PBX_CHECK_EQ(pbx_peer_launch_reply_decode(&f, &d), PBX_OK);
    PBX_CHECK(d.job_id == 11U && d.job_gen == 1U && d.pid == 4242U &&
              d.target_pid == 42U && d.target_gen == 5U);
    /* An error reply has no body; its status is what is read. */
    PBX_REQUIRE(pbx_peer_launch_reply_encode(0x08C0, NULL, 9, g_buf,
                                             sizeof(g_buf), &n) == PBX_OK);
    PBX_CHECK_EQ(n, PBX_IPC_HEADER_BYTES);
    PBX_CHECK_EQ(pbx_peer_launch_peek(g_buf, n, 0, &f), PBX_OK);
    PBX_CHECK_EQ(pbx_peer_launch_reply_decode(&f, &d), PBX_E_IPC_STATUS);
    PBX_CHECK_EQ(f.status, 0x08C0U);
    uint32_t ws = 0;
    PBX_REQUIRE(pbx_peer_exit_encode(0x0700, 5, g_buf, sizeof(g_buf), &n) ==
                PBX_OK);
    PBX_CHECK_EQ(pbx_peer_launch_peek(g_buf, n, 0, &f), PBX_OK);
    PBX_CHECK_EQ(pbx_peer_exit_decode(&f, &ws), PBX_OK);
    PBX_CHECK_EQ(ws, 0x0700U);
    /* A status in a request is refused. */
    pbx_le_put16(g_buf + 8, 1);
    PBX_CHECK_EQ(pbx_peer_launch_peek(g_buf, n, 0, &f), PBX_E_IPC_STATUS);
}

/* A BEGIN for job id:gen, entry e, install target tp:tg (mode install
 * when tg is nonzero, else runtime-reply). */
static size_t tn_begin(uint64_t id, uint32_t gen, const char *e, uint64_t tp,
                       uint32_t tg)
{
    pbx_ipc_begin b;
    memset(&b, 0, sizeof(b));
    b.ctx.session = 7;
    b.ctx.job_id = id;
    b.ctx.job_gen = gen;
    b.ctx.operation = PBX_IPC_OPERATION_READ;
    b.ctx.object_class = PBX_IPC_CLASS_FILE;
    b.ctx.lifetime = PBX_IPC_LIFETIME_ONE_SHOT;
    b.ctx.mode = tg != 0U ? PBX_IPC_MODE_INSTALL : PBX_IPC_MODE_RUNTIME_REPLY;
    b.ctx.urgency = PBX_IPC_URGENCY_ROUTINE;
    b.ctx.entry.len = (uint16_t)strlen(e);
    memcpy(b.ctx.entry.bytes, e, b.ctx.entry.len);
    b.label.len = 2;
    memcpy(b.label.bytes, "hi", 2);
    b.target.process_id = tp;
    b.target.process_gen = tg;
    b.target.slot = tg != 0U ? 20U : 0U;
    b.selector_len = 1;
    size_t n = 0;
    PBX_REQUIRE(pbx_ipc_begin_encode(&b, g_buf, sizeof(g_buf), &n) == PBX_OK);
    return n;
}

/* Binds the n-byte BEGIN in g_buf to job j; returns the result. */
static pbx_peer_launch_bind_result tn_bind(const pbx_peer_launch_binding *j,
                                           size_t n, pbx_ipc_begin *rec)
{
    size_t m = 0;
    pbx_err err = PBX_OK;
    return pbx_peer_launch_bind_begin(j, g_buf, n, g_out, sizeof(g_out), &m,
                                      rec, &err);
}

PBX_TEST(peers_launch_binds_begin_to_its_job)
{
    static pbx_peer_launch_binding j;
    static pbx_ipc_begin rec;
    memset(&j, 0, sizeof(j));
    j.job_id = 11;
    j.job_gen = 1;
    j.session = 7;
    j.realm = 3;
    j.entry_len = 3;
    memcpy(j.entry, "cat", 3);
    j.target_pid = 42;
    j.target_gen = 5;
    /* Its own claims pass unchanged. */
    PBX_CHECK_EQ(tn_bind(&j, tn_begin(11, 1, "cat", 42, 5), &rec),
                 PBX_PEER_BIND_OK);
    PBX_CHECK(rec.ctx.job_id == 11U && rec.target.process_gen == 5U);
    /* Another job, entry or target is refused. */
    PBX_CHECK_EQ(tn_bind(&j, tn_begin(12, 1, "cat", 42, 5), &rec),
                 PBX_PEER_BIND_JOB);
    PBX_CHECK_EQ(tn_bind(&j, tn_begin(11, 2, "cat", 42, 5), &rec),
                 PBX_PEER_BIND_JOB);
    PBX_CHECK_EQ(tn_bind(&j, tn_begin(11, 1, "dog", 42, 5), &rec),
                 PBX_PEER_BIND_ENTRY);
    PBX_CHECK_EQ(tn_bind(&j, tn_begin(11, 1, "cat", 43, 5), &rec),
                 PBX_PEER_BIND_TARGET);
    PBX_CHECK_EQ(tn_bind(&j, tn_begin(12, 1, "dog", 43, 5), &rec),
                 PBX_PEER_BIND_JOB);
    /* tn_begin claims session 7 and realm 0: the realm is filled in. A
     * session or realm claim of another is refused (after the job). */
    PBX_CHECK_EQ(tn_bind(&j, tn_begin(11, 1, "cat", 42, 5), &rec),
                 PBX_PEER_BIND_OK);
    PBX_CHECK(rec.ctx.session == 7U && rec.ctx.realm == 3U);
    size_t k = tn_begin(11, 1, "cat", 42, 5);
    pbx_le_put64(g_buf + PBX_IPC_HEADER_BYTES + 8, 8);
    PBX_CHECK_EQ(tn_bind(&j, k, &rec), PBX_PEER_BIND_SESSION);
    pbx_le_put64(g_buf + PBX_IPC_HEADER_BYTES + 8, 0);
    PBX_CHECK_EQ(tn_bind(&j, k, &rec), PBX_PEER_BIND_OK);
    PBX_CHECK_EQ(rec.ctx.session, 7U);
    pbx_le_put32(g_buf + PBX_IPC_HEADER_BYTES + 28, 4);
    PBX_CHECK_EQ(tn_bind(&j, k, &rec), PBX_PEER_BIND_REALM);
    pbx_le_put32(g_buf + PBX_IPC_HEADER_BYTES + 28, 3);
    PBX_CHECK_EQ(tn_bind(&j, k, &rec), PBX_PEER_BIND_OK);
    k = tn_begin(12, 1, "cat", 42, 5);
    pbx_le_put64(g_buf + PBX_IPC_HEADER_BYTES + 8, 8);
    PBX_CHECK_EQ(tn_bind(&j, k, &rec), PBX_PEER_BIND_JOB);
    /* Zero job, empty entry and zero target are filled in. The encoder
     * cannot write them, so they are patched raw as a client would. */
    size_t n = tn_begin(11, 1, "cat", 42, 5);
    uint8_t *b = g_buf + PBX_IPC_HEADER_BYTES;
    pbx_le_put64(b, 0);
    pbx_le_put32(b + 24, 0);
    pbx_le_put64(b + 16, 0);
    pbx_le_put32(b + 32, 0);
    /* Drop the entry bytes: the label follows the fixed part directly. */
    memmove(b + PBX_IPC_BEGIN_FIXED_BYTES, b + PBX_IPC_BEGIN_FIXED_BYTES + 3,
            2);
    pbx_le_put16(b + 52, 0);
    n -= 3U;
    pbx_le_put32(g_buf + 20, (uint32_t)(n - PBX_IPC_HEADER_BYTES));
    PBX_CHECK_EQ(tn_bind(&j, n, &rec), PBX_PEER_BIND_OK);
    PBX_CHECK(rec.ctx.job_id == 11U && rec.ctx.job_gen == 1U);
    PBX_CHECK(rec.ctx.entry.len == 3U &&
              memcmp(rec.ctx.entry.bytes, "cat", 3) == 0);
    PBX_CHECK(rec.label.len == 2U && memcmp(rec.label.bytes, "hi", 2) == 0);
    PBX_CHECK(rec.target.process_id == 42U && rec.target.process_gen == 5U &&
              rec.target.slot == 20U);
    /* A job with no staged process cannot ask for install mode; runtime
     * reply needs none. */
    j.target_gen = 0;
    PBX_CHECK_EQ(tn_bind(&j, tn_begin(11, 1, "cat", 42, 5), &rec),
                 PBX_PEER_BIND_TARGET);
    PBX_CHECK_EQ(tn_bind(&j, tn_begin(11, 1, "cat", 0, 0), &rec),
                 PBX_PEER_BIND_OK);
    /* Text lengths that disagree with the body are malformed. */
    n = tn_begin(11, 1, "cat", 0, 0);
    PBX_CHECK_EQ(tn_bind(&j, n - 1U, &rec), PBX_PEER_BIND_MALFORMED);
    /* The job's own process (launchd forked it) may be named with any
     * nonzero generation, procd judging it; generation zero, another
     * pid, or a zero target without a simulated one are refused. */
    j.own_pid = 4242;
    PBX_CHECK_EQ(tn_bind(&j, tn_begin(11, 1, "cat", 4242, 9), &rec),
                 PBX_PEER_BIND_OK);
    PBX_CHECK(rec.target.process_id == 4242U && rec.target.process_gen == 9U);
    PBX_CHECK_EQ(tn_bind(&j, tn_begin(11, 1, "cat", 4243, 9), &rec),
                 PBX_PEER_BIND_TARGET);
    n = tn_begin(11, 1, "cat", 4242, 9);
    pbx_le_put32(g_buf + PBX_IPC_HEADER_BYTES + 32, 0);
    PBX_CHECK_EQ(tn_bind(&j, n, &rec), PBX_PEER_BIND_TARGET);
    n = tn_begin(11, 1, "cat", 4242, 9);
    pbx_le_put64(g_buf + PBX_IPC_HEADER_BYTES + 16, 0);
    pbx_le_put32(g_buf + PBX_IPC_HEADER_BYTES + 32, 0);
    PBX_CHECK_EQ(tn_bind(&j, n, &rec), PBX_PEER_BIND_TARGET);
    /* With a simulated staged process too, both are accepted, nothing
     * else. */
    j.target_gen = 5;
    PBX_CHECK_EQ(tn_bind(&j, tn_begin(11, 1, "cat", 4242, 9), &rec),
                 PBX_PEER_BIND_OK);
    PBX_CHECK_EQ(tn_bind(&j, tn_begin(11, 1, "cat", 42, 5), &rec),
                 PBX_PEER_BIND_OK);
    PBX_CHECK_EQ(tn_bind(&j, tn_begin(11, 1, "cat", 42, 9), &rec),
                 PBX_PEER_BIND_TARGET);
}

PBX_TEST(peers_launch_carries_the_broker_block)
{
    static pbx_peer_launch_req r;
    static pbx_peer_launch_req d;
    static const char *const arg = "cat";
    static const char scope[] = "/home/u/docs";
    static const char root[] = "/home/u";
    pbx_peer_launch_frame f;
    memset(&r, 0, sizeof(r));
    r.session = 1;
    r.realm = 1;
    r.entry_len = 3;
    memcpy(r.entry, "cat", 3);
    r.argc = 1;
    r.args[0] = (const uint8_t *)arg;
    r.arg_lens[0] = 3;
    r.flags = PBX_PEER_LAUNCH_SANDBOX | PBX_PEER_LAUNCH_BROKERED;
    r.broker_scope = (const uint8_t *)scope;
    r.broker_scope_len = (uint16_t)strlen(scope);
    r.broker_root = (const uint8_t *)root;
    r.broker_root_len = (uint16_t)strlen(root);
    size_t n = 0;
    PBX_REQUIRE(pbx_peer_launch_encode(&r, g_buf, sizeof(g_buf), &n) == PBX_OK);
    PBX_REQUIRE(pbx_peer_launch_peek(g_buf, n, 3, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_peer_launch_decode(&f, &d), PBX_OK);
    PBX_CHECK_EQ(d.flags, PBX_PEER_LAUNCH_SANDBOX | PBX_PEER_LAUNCH_BROKERED);
    PBX_CHECK_EQ(d.broker_scope_len, strlen(scope));
    PBX_CHECK(memcmp(d.broker_scope, scope, strlen(scope)) == 0);
    PBX_CHECK_EQ(d.broker_root_len, strlen(root));
    PBX_CHECK(memcmp(d.broker_root, root, strlen(root)) == 0);
    /* A byte after the block; a relative root; brokered opens without
     * the sandbox; the flag without its block. */
    g_buf[n] = 'x';
    pbx_le_put32(g_buf + 20, (uint32_t)(n + 1U - PBX_IPC_HEADER_BYTES));
    PBX_REQUIRE(pbx_peer_launch_peek(g_buf, n + 1U, 3, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_peer_launch_decode(&f, &d), PBX_E_IPC_TRAILING);
    PBX_REQUIRE(pbx_peer_launch_encode(&r, g_buf, sizeof(g_buf), &n) == PBX_OK);
    g_buf[n - strlen(root)] = 'h';
    PBX_REQUIRE(pbx_peer_launch_peek(g_buf, n, 3, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_peer_launch_decode(&f, &d), PBX_E_IPC_TEXT);
    /* With a profile path too: the profile first, then the block. */
    static const char prof[] = "/home/u/my.profile";
    r.flags |= PBX_PEER_LAUNCH_PROFILE;
    r.profile = (const uint8_t *)prof;
    r.profile_len = (uint16_t)strlen(prof);
    PBX_REQUIRE(pbx_peer_launch_encode(&r, g_buf, sizeof(g_buf), &n) == PBX_OK);
    PBX_REQUIRE(pbx_peer_launch_peek(g_buf, n, 3, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_peer_launch_decode(&f, &d), PBX_OK);
    PBX_CHECK(d.profile_len == strlen(prof) &&
              memcmp(d.profile, prof, d.profile_len) == 0);
    PBX_CHECK(d.broker_root_len == strlen(root) &&
              memcmp(d.broker_root, root, strlen(root)) == 0);
    /* Routine opens: a flag of brokered opens only. */
    r.flags |= PBX_PEER_LAUNCH_ROUTINE_OPENS;
    PBX_REQUIRE(pbx_peer_launch_encode(&r, g_buf, sizeof(g_buf), &n) == PBX_OK);
    PBX_REQUIRE(pbx_peer_launch_peek(g_buf, n, 3, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_peer_launch_decode(&f, &d), PBX_OK);
    PBX_CHECK((d.flags & PBX_PEER_LAUNCH_ROUTINE_OPENS) != 0U);
    r.flags = PBX_PEER_LAUNCH_SANDBOX | PBX_PEER_LAUNCH_ROUTINE_OPENS;
    PBX_CHECK_EQ(pbx_peer_launch_encode(&r, g_buf, sizeof(g_buf), &n),
                 PBX_E_IPC_BOUND);
    r.flags = PBX_PEER_LAUNCH_BROKERED;
    PBX_CHECK_EQ(pbx_peer_launch_encode(&r, g_buf, sizeof(g_buf), &n),
                 PBX_E_IPC_BOUND);
    r.flags = PBX_PEER_LAUNCH_SANDBOX | PBX_PEER_LAUNCH_BROKERED;
    r.broker_root_len = 0U;
    PBX_CHECK_EQ(pbx_peer_launch_encode(&r, g_buf, sizeof(g_buf), &n),
                 PBX_E_IPC_BOUND);
}

/* A LAUNCH of "prog" with flags and a scope as given, encoded into g_buf;
 * returns its length. */
static size_t tn_launch_cwd(uint32_t flags, bool scope)
{
    static pbx_peer_launch_req r;
    static const char *const arg = "prog";
    memset(&r, 0, sizeof(r));
    r.session = 1;
    r.realm = 1;
    r.entry_len = 4;
    memcpy(r.entry, "prog", 4);
    r.argc = 1;
    r.args[0] = (const uint8_t *)arg;
    r.arg_lens[0] = 4;
    r.flags = flags;
    r.scope = scope;
    size_t n = 0;
    PBX_REQUIRE(pbx_peer_launch_encode(&r, g_buf, sizeof(g_buf), &n) == PBX_OK);
    return n;
}

PBX_TEST(peers_launch_carries_the_callers_working_directory)
{
    static pbx_peer_launch_req d;
    pbx_peer_launch_frame f;
    /* Without the flag: no working directory (launchd's own is kept). */
    size_t n = tn_launch_cwd(PBX_PEER_LAUNCH_SANDBOX, false);
    PBX_REQUIRE(pbx_peer_launch_peek(g_buf, n, 3, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_peer_launch_decode(&f, &d), PBX_OK);
    PBX_CHECK_EQ(pbx_peer_launch_cwd_index(&d), -1);
    PBX_CHECK_EQ(pbx_peer_launch_nfds(&d), 3U);
    /* With it alone: a fourth descriptor, which is not a scope. */
    n = tn_launch_cwd(PBX_PEER_LAUNCH_CWD, false);
    PBX_CHECK_EQ(pbx_peer_launch_peek(g_buf, n, 3, &f), PBX_E_IPC_CAP_COUNT);
    PBX_REQUIRE(pbx_peer_launch_peek(g_buf, n, 4, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_peer_launch_decode(&f, &d), PBX_OK);
    PBX_CHECK(d.flags == PBX_PEER_LAUNCH_CWD && !d.scope);
    PBX_CHECK_EQ(pbx_peer_launch_cwd_index(&d), 3);
    /* With a scope and the sandbox: the scope fourth, the directory
     * fifth. */
    n = tn_launch_cwd(PBX_PEER_LAUNCH_CWD | PBX_PEER_LAUNCH_SANDBOX, true);
    PBX_REQUIRE(pbx_peer_launch_peek(g_buf, n, 5, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_peer_launch_decode(&f, &d), PBX_OK);
    PBX_CHECK(d.scope);
    PBX_CHECK_EQ(pbx_peer_launch_cwd_index(&d), 4);
    PBX_CHECK_EQ(pbx_peer_launch_nfds(&d), 5U);
    /* The flag with only stdio is one descriptor short. */
    n = tn_launch_cwd(PBX_PEER_LAUNCH_CWD, false);
    pbx_le_put16(g_buf + 10, 3);
    PBX_REQUIRE(pbx_peer_launch_peek(g_buf, n, 3, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_peer_launch_decode(&f, &d), PBX_E_IPC_CAP_PARTITION);
}
