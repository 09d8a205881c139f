/*
 * test_obj_open_codec.c: the OPEN object call's codec
 * (peers/lib/pbx_peer_vfs.h): every mode judged against every grant,
 * malformed calls, and the reply's one-descriptor rule both ways.
 */
#include "../../ipc/pbx_ipc.h"
#include "../../peers/lib/pbx_peer.h"
#include "../../peers/lib/pbx_peer_vfs.h"
#include "../runner/pbx_test.h"

#include <string.h>

/* One judged OPEN: mode on an object granted (op, cls). */
typedef struct open_case {
    uint32_t mode;
    uint16_t op;
    uint16_t cls;
    uint32_t status;
} open_case;

PBX_TEST(obj_open_call_judged_by_mode_and_grant)
{
    enum {
        R = PBX_IPC_OPERATION_READ,
        W = PBX_IPC_OPERATION_WRITE,
        L = PBX_IPC_OPERATION_LIST,
        F = PBX_IPC_CLASS_FILE,
        D = PBX_IPC_CLASS_DIRECTORY,
        V = PBX_IPC_CLASS_DEVICE
    };
    const open_case cases[] = {
        {1, R, F, 0U},
        {2, W, F, 0U},
        {2, R, F, (uint32_t)PBX_E_OBJ_READ_ONLY},
        {3, R, F, (uint32_t)PBX_E_OBJ_READ_ONLY},
        /* A write grant covers reading its own file too. */
        {1, W, F, 0U},
        {3, W, F, 0U},
        {3, PBX_IPC_OPERATION_CREATE, F, 0U},
        {1, PBX_IPC_OPERATION_EXECUTE, F, (uint32_t)PBX_E_OBJ_NOT_GRANTED},
        {3, PBX_IPC_OPERATION_EXECUTE, F, (uint32_t)PBX_E_OBJ_NOT_GRANTED},
        {1, 0, F, (uint32_t)PBX_E_OBJ_NOT_GRANTED},
        {1, L, D, (uint32_t)PBX_E_OBJ_IS_DIR},
        {1, R, V, (uint32_t)PBX_E_OBJ_KIND},
        {0, R, F, (uint32_t)PBX_E_OBJ_ARG},
        {4, R, F, (uint32_t)PBX_E_OBJ_ARG},
    };
    for (size_t i = 0; i < PBX_ARRAY_LEN(cases); i++) {
        uint8_t buf[64];
        size_t n = 0;
        PBX_CHECK_EQ(pbx_peer_vfs_obj_open_encode(9, cases[i].mode, buf,
                                                  sizeof(buf), &n),
                     PBX_OK);
        PBX_CHECK_EQ(n, PBX_IPC_HEADER_BYTES + PBX_PEER_VFS_OPEN_BODY_BYTES);
        pbx_peer_vfs_grant g = {cases[i].op, cases[i].cls};
        pbx_peer_vfs_call call;
        PBX_CHECK(pbx_peer_vfs_obj_call_judge(buf, n, false, &g, &call));
        PBX_CHECK_EQ(call.status, cases[i].status);
        PBX_CHECK_EQ(call.op, PBX_PEER_OP_OBJ_OPEN);
        PBX_CHECK_EQ(call.mode, cases[i].mode);
        PBX_CHECK_EQ(call.seq, 9U);
    }
}

PBX_TEST(obj_open_call_malformed)
{
    uint8_t buf[64];
    size_t n = 0;
    pbx_peer_vfs_grant g = {PBX_IPC_OPERATION_READ, PBX_IPC_CLASS_FILE};
    pbx_peer_vfs_call call;
    PBX_CHECK_EQ(pbx_peer_vfs_obj_open_encode(9, 1, buf, 39, &n),
                 PBX_E_IPC_NO_SPACE);
    PBX_REQUIRE(pbx_peer_vfs_obj_open_encode(9, 1, buf, sizeof(buf), &n) ==
                PBX_OK);
    /* The second word must be zero. */
    pbx_le_put32(buf + PBX_IPC_HEADER_BYTES + 4U, 1U);
    PBX_CHECK(pbx_peer_vfs_obj_call_judge(buf, n, false, &g, &call));
    PBX_CHECK_EQ(call.status, (uint32_t)PBX_E_IPC_RESERVED);
    pbx_le_put32(buf + PBX_IPC_HEADER_BYTES + 4U, 0U);
    /* A short body, a descriptor with the call, a retired object. */
    PBX_CHECK(pbx_peer_vfs_obj_call_judge(buf, n - 1U, false, &g, &call));
    PBX_CHECK_EQ(call.status, (uint32_t)PBX_E_IPC_BODY_LEN);
    PBX_CHECK(pbx_peer_vfs_obj_call_judge(buf, n, true, &g, &call));
    PBX_CHECK_EQ(call.status, (uint32_t)PBX_E_IPC_CAP_COUNT);
    PBX_CHECK(pbx_peer_vfs_obj_call_judge(buf, n, false, NULL, &call));
    PBX_CHECK_EQ(call.status, (uint32_t)PBX_E_OBJ_RETIRED);
}

PBX_TEST(obj_open_reply_carries_exactly_one_descriptor)
{
    uint8_t buf[64];
    size_t n = 0;
    pbx_peer_vfs_grant g = {PBX_IPC_OPERATION_READ, PBX_IPC_CLASS_FILE};
    pbx_peer_vfs_call call;
    PBX_REQUIRE(pbx_peer_vfs_obj_open_encode(9, 1, buf, sizeof(buf), &n) ==
                PBX_OK);
    PBX_REQUIRE(pbx_peer_vfs_obj_call_judge(buf, n, false, &g, &call));
    uint8_t rep[64];
    size_t rn = 0;
    PBX_CHECK_EQ(pbx_peer_vfs_obj_open_reply_encode(&call, rep, 31, &rn),
                 PBX_E_IPC_NO_SPACE);
    PBX_REQUIRE(pbx_peer_vfs_obj_open_reply_encode(&call, rep, sizeof(rep),
                                                   &rn) == PBX_OK);
    PBX_CHECK_EQ(rn, PBX_IPC_HEADER_BYTES);
    uint32_t st = 77;
    PBX_CHECK_EQ(pbx_peer_vfs_obj_open_reply_decode(rep, rn, 1, 9, &st),
                 PBX_OK);
    PBX_CHECK_EQ(st, 0U);
    /* Status 0 without its descriptor, or with two, is malformed. */
    PBX_CHECK_EQ(pbx_peer_vfs_obj_open_reply_decode(rep, rn, 0, 9, &st),
                 PBX_E_IPC_CAP_COUNT);
    PBX_CHECK_EQ(pbx_peer_vfs_obj_open_reply_decode(rep, rn, 2, 9, &st),
                 PBX_E_IPC_CAP_COUNT);
    PBX_CHECK_EQ(pbx_peer_vfs_obj_open_reply_decode(rep, rn, 1, 8, &st),
                 PBX_E_PEER_MISMATCH);
    PBX_CHECK_EQ(pbx_peer_vfs_obj_open_reply_decode(rep, rn - 1U, 1, 9, &st),
                 PBX_E_IPC_TRUNCATED);
    /* A refusal carries no descriptor. */
    call.status = (uint32_t)PBX_E_OBJ_NO_REVOCABLE;
    PBX_CHECK_EQ(
        pbx_peer_vfs_obj_open_reply_encode(&call, rep, sizeof(rep), &rn),
        PBX_E_IPC_STATUS);
    PBX_REQUIRE(pbx_peer_vfs_obj_reply_encode(&call, NULL, rep, sizeof(rep),
                                              &rn) == PBX_OK);
    st = 0;
    PBX_CHECK_EQ(pbx_peer_vfs_obj_open_reply_decode(rep, rn, 0, 9, &st),
                 PBX_OK);
    PBX_CHECK_EQ(st, (uint32_t)PBX_E_OBJ_NO_REVOCABLE);
    PBX_CHECK_EQ(pbx_peer_vfs_obj_open_reply_decode(rep, rn, 1, 9, &st),
                 PBX_E_IPC_CAP_COUNT);
}
