/*
 * rt_start.c: the executable's entry (pbx_port_main) and its startup:
 * PBX1 through the port, the arena of exactly the derived size, the live
 * startup inventory judged by capabi before and after the public endpoint
 * exists, the core, and only then the readiness report. Each refusal
 * exits with its own pbx_rt_exit status and nothing is reported ready.
 */
#include "core/pbx_core_inspect.h"
#include "powerboxd/runtime/rt_int.h"
#include "sha2/pbx_sha2.h"

/** The runtime's whole state; static so that no stack frame holds it. */
static rt_state rt_g;

/* Maps a port refusal to read PBX1 to its exit status. */
static uint8_t rt_pbx1_status(pbx_err err)
{
    switch (err) {
    case PBX_E_PORT_PBX1_MISSING:
        return PBX_RT_EXIT_PBX1_MISSING;
    case PBX_E_PORT_PBX1_KIND:
        return PBX_RT_EXIT_PBX1_KIND;
    case PBX_E_PORT_PBX1_UNSEALED:
        return PBX_RT_EXIT_PBX1_UNSEALED;
    default:
        return PBX_RT_EXIT_PBX1_SIZE;
    }
}

/* The exit status of each failing verdict of the shared PBX1 check. */
static uint8_t rt_verdict_status(pbx_core_startup_verdict v)
{
    switch (v) {
    case PBX_CORE_STARTUP_LAYOUT:
        return PBX_RT_EXIT_PBX1_LAYOUT;
    case PBX_CORE_STARTUP_EXTENT:
        return PBX_RT_EXIT_PBX1_EXTENT;
    case PBX_CORE_STARTUP_TRANSIENT:
        return PBX_RT_EXIT_TRANSIENT;
    case PBX_CORE_STARTUP_CORE:
        return PBX_RT_EXIT_CORE_INIT;
    default:
        return PBX_RT_EXIT_PBX1_RECORD;
    }
}

/* Reads PBX1 and judges it by the one shared startup check
 * (pbx_core_startup_check, which `pbx geometry check` runs too), then
 * maps the one arena. */
static uint8_t rt_storage(rt_state *s)
{
    static pbx_core_startup_result res;
    uint32_t len = 0;
    void *arena = NULL;
    pbx_err err = pbx_port_pbx1_read(&s->port, PBX_CAPABI_SLOT_PBX1, s->pbx1,
                                     sizeof(s->pbx1), &len);
    if (err != PBX_OK) {
        s->refused_err = err;
        return rt_pbx1_status(err);
    }
    if (pbx_core_startup_check(s->pbx1, len, &res) != PBX_CORE_STARTUP_OK) {
        s->refused_err = res.err;
        return rt_verdict_status(res.verdict);
    }
    s->geo = res.geo;
    s->layout = res.layout;
    /* The core's tslot records plus one message's worth of receipts in
     * flight: the runtime can always place what arrives. */
    if (pbx_capabi_layout_init(&s->slots, PBX_CAPABI_TRANSIENT_FIRST_DEFAULT,
                               res.transient_count) != PBX_OK) {
        return PBX_RT_EXIT_TRANSIENT;
    }
    if (pbx_port_arena_map(&s->port, s->layout.arena_bytes, &arena) != PBX_OK) {
        return PBX_RT_EXIT_ARENA;
    }
    s->arena = arena;
    return 0;
}

/* Maps an inventory refusal to its exit status. */
static uint8_t rt_inventory_status(pbx_err err)
{
    switch (err) {
    case PBX_E_CAPABI_ENTRY_MISSING:
        return PBX_RT_EXIT_INV_MISSING;
    case PBX_E_CAPABI_KIND:
        return PBX_RT_EXIT_INV_KIND;
    case PBX_E_CAPABI_RIGHTS_MISSING:
        return PBX_RT_EXIT_INV_RIGHTS_MISSING;
    case PBX_E_CAPABI_RIGHTS_EXTRA:
        return PBX_RT_EXIT_INV_RIGHTS_EXTRA;
    case PBX_E_CAPABI_PROVENANCE:
        return PBX_RT_EXIT_INV_PROVENANCE;
    default:
        return PBX_RT_EXIT_INV_OTHER;
    }
}

/* Observes every startup inventory slot live and judges the whole set;
 * a refusal records the error and the slot it concerns. */
static pbx_err rt_inventory(rt_state *s, pbx_capabi_phase phase)
{
    pbx_capabi_observed obs[PBX_CAPABI_ENTRY_COUNT];
    size_t bad = PBX_CAPABI_ENTRY_COUNT;
    for (uint32_t i = 0; i < (uint32_t)PBX_CAPABI_ENTRY_COUNT; i++) {
        rt_observe(s, PBX_CAPABI_STARTUP_FIRST + i, &obs[i]);
    }
    pbx_err err =
        pbx_capabi_check_inventory(obs, PBX_CAPABI_ENTRY_COUNT, phase, &bad);
    if (err != PBX_OK) {
        s->refused_err = err;
        s->refused_slot =
            bad < (size_t)PBX_CAPABI_ENTRY_COUNT ? (int32_t)obs[bad].slot : -1;
    }
    return err;
}

/* Counts the bytes of a NUL-terminated argument, bounded by 255. */
static uint32_t rt_strlen(const char *str)
{
    uint32_t n = 0;
    while (n < 255U && str[n] != '\0') {
        n++;
    }
    return n;
}

/* Sends the typed readiness report on the supervisor route. */
static pbx_err rt_ready_send(rt_state *s)
{
    uint8_t rep[PBX_RT_READY_BYTES];
    pbx_mem_set(rep, 0, sizeof(rep));
    pbx_le_put32(rep, PBX_RT_READY_MAGIC);
    pbx_le_put16(rep + 4, PBX_RT_READY_VERSION);
    pbx_le_put16(rep + 6, PBX_RT_READY_KIND_READY);
    pbx_le_put32(rep + 8, PBX_CAPABI_SLOT_PUBLIC);
    pbx_le_put32(rep + 12, s->slots.transient_first);
    pbx_le_put32(rep + 16, s->slots.transient_count);
    pbx_le_put64(rep + 24, (uint64_t)s->layout.arena_bytes);
    return pbx_port_notify(&s->port, PBX_CAPABI_SLOT_SUPERVISOR, rep,
                           sizeof(rep));
}

/* Creates the public endpoint at its slot, re-validates, starts the core. */
static uint8_t rt_go_live(rt_state *s, const pbx_port_start *start)
{
    const char *name = start->argv[start->argc - 1U];
    if (pbx_port_public_open(&s->port, PBX_CAPABI_SLOT_PUBLIC,
                             (const uint8_t *)name,
                             rt_strlen(name)) != PBX_OK) {
        return PBX_RT_EXIT_PUBLIC;
    }
    s->public_created = 1U;
    if (rt_inventory(s, PBX_CAPABI_PHASE_READY) != PBX_OK) {
        return PBX_RT_EXIT_READY_INVENTORY;
    }
    if (pbx_core_init(&s->core, &s->layout, s->arena, s->layout.arena_bytes,
                      &s->slots, &rt_ops, s) != PBX_OK) {
        return PBX_RT_EXIT_CORE_INIT;
    }
    /* A vfsd FOUND must name the committed scope by the identity the
     * kernel gives powerboxd's own copy of it, which the caller cannot
     * choose (on Linux the inode of the socket vfsd handed out). */
    pbx_core_set_identity(&s->core, rt_identity);
    /* launchd's broker is recognised by the endpoint its frames arrive
     * on (slot 10, judged by capabi above), never by who sent them. */
    if (pbx_port_broker_open(&s->port, (int32_t)PBX_CAPABI_SLOT_BROKER) !=
        PBX_OK) {
        return PBX_RT_EXIT_BROKER;
    }
    return 0;
}

/* Whether str is exactly word (both NUL-terminated; the walk stops at
 * word's end, so it is bounded by word's length). */
static bool rt_streq(const char *str, const char *word)
{
    uint32_t i = 0;
    while (word[i] != '\0') {
        if (str[i] != word[i]) {
            return false;
        }
        i++;
    }
    return str[i] == '\0';
}

/* The usage powerboxd -h prints on its standard output. */
static const char rt_usage[] =
    "usage: powerboxd [--incarnation N] ENDPOINT-NAME\n"
    "       powerboxd -h | --help\n"
    "powerboxd, the capability broker. Its supervisor (pbx up) starts it\n"
    "with its startup inventory in place: slot 3 the sealed PBX1 record,\n"
    "4 the readiness route, 5 vfsd, 6 ttyd, 7 procd, 8 launchd, 10\n"
    "launchd's broker endpoint; slot 9 must be empty. ENDPOINT-NAME names\n"
    "the public endpoint it creates in slot 9 (on Linux a socket path, or\n"
    "@NAME for an abstract one; it may not begin with '-'). Every startup\n"
    "refusal prints one line and exits with its own status (10..31);\n"
    "once running it logs one line per decision and per grant end to its\n"
    "standard error, each request and grant id written N-I.G: N the\n"
    "incarnation (--incarnation N or --incarnation=N, 1 to 4294967295;\n"
    "1 when absent), the number its supervisor gave this start, I.G the\n"
    "id on the wire.\n"
    "See powerboxd(8) and docs/HOST.md.\n";

/* Whether str begins with word (both NUL-terminated; bounded by word). */
static bool rt_prefix(const char *str, const char *word)
{
    for (uint32_t i = 0; word[i] != '\0'; i++) {
        if (str[i] != word[i]) {
            return false;
        }
    }
    return true;
}

/* Parses a decimal incarnation: 1 to UINT32_MAX, digits only, at most
 * ten of them. Returns 0 when str is not one. */
static uint32_t rt_incarnation_parse(const char *str)
{
    uint64_t v = 0;
    uint32_t i = 0;
    while (i < 11U && str[i] >= '0' && str[i] <= '9') {
        v = v * 10U + (uint64_t)(str[i] - '0');
        i++;
    }
    if (i == 0U || i > 10U || str[i] != '\0' || v > UINT32_MAX) {
        return 0U;
    }
    return (uint32_t)v;
}

uint8_t rt_args(const pbx_port_start *start, uint32_t *incarnation)
{
    uint32_t argc = start->argc;
    *incarnation = 1U;
    if (argc == 2U && start->argv[1] != NULL &&
        (rt_streq(start->argv[1], "-h") ||
         rt_streq(start->argv[1], "--help"))) {
        return RT_ARGS_HELP;
    }
    /* An optional "--incarnation N" or "--incarnation=N" first: the
     * supervisor's number of this start, which prefixes every request
     * and grant id logged. */
    const char *opt = argc > 2U ? start->argv[1] : NULL;
    if (argc == 4U && opt != NULL && start->argv[2] != NULL &&
        rt_streq(opt, "--incarnation")) {
        *incarnation = rt_incarnation_parse(start->argv[2]);
    } else if (argc == 3U && opt != NULL && rt_prefix(opt, "--incarnation=")) {
        *incarnation = rt_incarnation_parse(opt + 14);
    } else if (argc != 2U) {
        return PBX_RT_EXIT_ARGS;
    }
    if (*incarnation == 0U) {
        return PBX_RT_EXIT_ARGS;
    }
    /* Then exactly one name that is not an option. */
    const char *name = start->argv[argc - 1U];
    if (name == NULL || rt_strlen(name) == 0U || name[0] == '-') {
        return PBX_RT_EXIT_ARGS;
    }
    return 0;
}

uint8_t rt_startup(rt_state *s, const pbx_port_start *start)
{
    uint8_t st;
    pbx_err err;
    s->refused_err = PBX_OK;
    s->refused_slot = -1;
    /* The SHA-256 path is chosen once, before anything is hashed and
     * while the process has one thread: the x86 SHA extensions where
     * CPUID reports them, the portable rounds elsewhere. */
    (void)pbx_sha2_select();
    if (rt_args(start, &s->incarnation) != 0U) {
        return PBX_RT_EXIT_ARGS;
    }
    err = pbx_port_init(&s->port, (int32_t)PBX_CAPABI_TRANSIENT_FIRST_DEFAULT,
                        (int32_t)(PBX_CAPABI_TRANSIENT_FIRST_DEFAULT +
                                  PBX_RT_TRANSIENT_MAX - 1U));
    if (err == PBX_E_PORT_NOFILE) {
        return PBX_RT_EXIT_NOFILE;
    }
    if (err != PBX_OK) {
        return PBX_RT_EXIT_PORT_INIT;
    }
    st = rt_storage(s);
    if (st != 0U) {
        return st;
    }
    err = rt_inventory(s, PBX_CAPABI_PHASE_STARTUP);
    if (err != PBX_OK) {
        return rt_inventory_status(err);
    }
    st = rt_go_live(s, start);
    if (st != 0U) {
        return st;
    }
    if (rt_ready_send(s) != PBX_OK) {
        return PBX_RT_EXIT_READY_SEND;
    }
    /* Slot 4 stays open after readiness: restarted peers' routes come
     * back over it (ROUTE_ATTACH, rt_attach.c). A port that cannot watch
     * it (EriX, for now) runs without re-attachment. */
    if (pbx_port_supervisor_open(
            &s->port, (int32_t)PBX_CAPABI_SLOT_SUPERVISOR) != PBX_OK) {
        s->supervisor_down = 1U;
        rt_log_note("powerboxd: this port cannot watch the supervisor "
                    "connection: no route is attached after startup");
    }
    return 0;
}

uint8_t pbx_port_main(const pbx_port_start *start)
{
    uint32_t incarnation = 0;
    if (rt_args(start, &incarnation) == RT_ARGS_HELP) {
        /* Help is asked for, not a refusal: usage on stdout, status 0. */
        bool ok = pbx_port_print((const uint8_t *)rt_usage,
                                 (uint32_t)(sizeof(rt_usage) - 1U));
        return ok ? (uint8_t)0U : (uint8_t)1U;
    }
    uint8_t st = rt_startup(&rt_g, start);
    if (st != 0U) {
        rt_log_refused(st, rt_g.refused_err, rt_g.refused_slot);
        return st;
    }
    return rt_loop(&rt_g);
}
