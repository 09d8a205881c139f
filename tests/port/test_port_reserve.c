/*
 * test_port_reserve.c: the linux-x86_64 port's reservation
 * (pbx_port_reserve, lx_slot.c), tested from outside through the
 * portcheck image ($PBX_PORTCHECK, request 'V' reserves reservable slot
 * 200 + arg). One F_DUPFD_CLOEXEC both proves the number empty and places
 * the placeholder; a number already holding a receipt or a placeholder
 * is refused with PBX_E_PORT_SLOT_OCCUPIED, its content untouched, and
 * the copy the refusal made elsewhere is gone again.
 */
#define _GNU_SOURCE
#include "../../base/pbx_base.h"
#include "../../powerboxd/port/pbx_port.h"
#include "../runner/pbx_test.h"
#include "port_child.h"

#include <sys/mman.h>
#include <unistd.h>

/* The portcheck layout (powerboxd/portcheck/portcheck.c). */
#define T_RESV             200
#define T_KIND_PLACEHOLDER 1U
#define T_KIND_MEMORY      5U
#define T_KIND_EMPTY       0U

/* Asks the child to reserve slot T_RESV + arg; returns its answer. */
static uint32_t t_reserve(t_child *c, uint8_t arg)
{
    uint32_t w[T_REPLY_WORDS];
    bool replied = t_request(c, 'V', arg, NULL, 0, w, NULL);
    PBX_CHECK(replied);
    return replied ? w[0] : UINT32_MAX;
}

/* Asks the child what slot holds; returns the kind (UINT32_MAX when the
 * query failed). */
static uint32_t t_kind(t_child *c, int32_t slot)
{
    uint32_t w[T_REPLY_WORDS];
    uint8_t q[5] = {'Q', 0, 0, 0, 0};
    pbx_le_put32(q + 1, (uint32_t)slot);
    if (!t_send(c->client, q, sizeof(q), NULL, 0) ||
        !t_recv_reply(c->client, w, NULL, 5000) || w[0] != PBX_OK) {
        return UINT32_MAX;
    }
    return w[1];
}

/* Starts the portcheck image, connects, has it reserve its four slots
 * ('F') and makes the object a test hands over; false at the first step
 * that fails. *obj is then the caller's to close. */
static bool tr_start(t_child *c, uint32_t *w, int *obj)
{
    if (!t_spawn(c, T_PBX1_GOOD) || !t_wait_ready(c)) {
        return false;
    }
    c->client = t_connect(c);
    if (c->client < 0 || !t_request(c, 'F', 0, NULL, 0, w, NULL)) {
        return false;
    }
    *obj = t_memfd("pbx-test-obj", NULL, 0);
    return *obj >= 0;
}

PBX_TEST(port_reserve_refuses_an_occupied_slot_and_leaves_it_untouched)
{
    t_child c;
    uint32_t w[T_REPLY_WORDS];
    int obj = -1;
    PBX_REQUIRE(tr_start(&c, w, &obj));
    /* A receipt held in reservation 0 (slot 200); 201..203 hold the
     * startup placeholders, 204 is empty. */
    PBX_REQUIRE(t_request(&c, 'H', 0, &obj, 1, w, NULL));
    PBX_CHECK_EQ(w[0], PBX_OK);
    int base = t_fd_count(c.pid);
    PBX_CHECK_EQ(t_reserve(&c, 0), PBX_E_PORT_SLOT_OCCUPIED);
    PBX_CHECK(t_same_object(c.pid, T_RESV, obj));
    PBX_CHECK_EQ(t_kind(&c, T_RESV), T_KIND_MEMORY);
    PBX_CHECK_EQ(t_reserve(&c, 1), PBX_E_PORT_SLOT_OCCUPIED);
    PBX_CHECK_EQ(t_kind(&c, T_RESV + 1), T_KIND_PLACEHOLDER);
    /* The refusals' copies landed on 204, the lowest free number at or
     * above each slot asked for, and are gone again. */
    PBX_CHECK_EQ(t_kind(&c, T_RESV + 4), T_KIND_EMPTY);
    PBX_CHECK_EQ(t_fd_count(c.pid), base);
    /* An empty number is filled with the placeholder, exactly there. */
    PBX_CHECK_EQ(t_reserve(&c, 10), PBX_OK);
    PBX_CHECK_EQ(t_kind(&c, T_RESV + 10), T_KIND_PLACEHOLDER);
    PBX_CHECK_EQ(t_kind(&c, T_RESV + 4), T_KIND_EMPTY);
    PBX_CHECK_EQ(t_fd_count(c.pid), base + 1);
    PBX_CHECK_EQ(t_reserve(&c, 10), PBX_E_PORT_SLOT_OCCUPIED);
    PBX_CHECK_EQ(t_fd_count(c.pid), base + 1);
    /* Outside the reservable range (200..263) nothing is asked. */
    PBX_CHECK_EQ(t_reserve(&c, 64), PBX_E_PORT_SLOT_RANGE);
    uint8_t x[2] = {'X', 0};
    PBX_CHECK(t_send(c.client, x, sizeof(x), NULL, 0));
    PBX_CHECK_EQ(t_exit_status(&c), 0);
    t_close_all(&c);
    (void)close(obj);
}

/* Asks the child for request op on slot T_RESV + arg; returns its first
 * word (UINT32_MAX without a reply). */
static uint32_t t_slot_op(t_child *c, char op, uint8_t arg)
{
    uint32_t w[T_REPLY_WORDS];
    bool replied = t_request(c, op, arg, NULL, 0, w, NULL);
    PBX_CHECK(replied);
    return replied ? w[0] : UINT32_MAX;
}

PBX_TEST(port_restore_knows_a_moved_receipt_and_refuses_an_emptied_slot)
{
    t_child c;
    uint32_t w[T_REPLY_WORDS];
    int obj = -1;
    PBX_REQUIRE(tr_start(&c, w, &obj));
    int base = t_fd_count(c.pid);
    /* A receipt moved into reservation 0, then restored over. */
    PBX_REQUIRE(t_request(&c, 'H', 0, &obj, 1, w, NULL));
    PBX_CHECK_EQ(w[0], PBX_OK);
    PBX_CHECK_EQ(t_slot_op(&c, 'R', 0), PBX_OK);
    PBX_CHECK_EQ(t_kind(&c, T_RESV), T_KIND_PLACEHOLDER);
    PBX_CHECK(!t_same_object(c.pid, T_RESV, obj));
    PBX_CHECK_EQ(t_fd_count(c.pid), base);
    /* Moved again, then deleted: the slot is empty, and a restore of an
     * empty slot is refused (a stale record would fill it instead). */
    PBX_REQUIRE(t_request(&c, 'H', 0, &obj, 1, w, NULL));
    PBX_CHECK_EQ(w[0], PBX_OK);
    PBX_CHECK_EQ(t_slot_op(&c, 'K', 0), PBX_OK);
    PBX_CHECK_EQ(t_kind(&c, T_RESV), T_KIND_EMPTY);
    PBX_CHECK_EQ(t_slot_op(&c, 'R', 0), PBX_E_PORT_NOT_RESERVED);
    PBX_CHECK_EQ(t_kind(&c, T_RESV), T_KIND_EMPTY);
    PBX_CHECK_EQ(t_fd_count(c.pid), base - 1);
    uint8_t x[2] = {'X', 0};
    PBX_CHECK(t_send(c.client, x, sizeof(x), NULL, 0));
    PBX_CHECK_EQ(t_exit_status(&c), 0);
    t_close_all(&c);
    (void)close(obj);
}
