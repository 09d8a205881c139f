/*
 * test_peers_tty_keys.c: ttyd's reading of terminal input toward a prompt
 * (pbx_peer_tty_keys.h). Every class of sequence a terminal sends (mouse
 * reports of every encoding, focus reports, replies to DECRQM, DA, CPR,
 * OSC and DCS queries, function keys in every keyboard mode, pastes,
 * 8-bit controls) carries y, Y, n or N bytes and yields no answer, split
 * at every byte offset between two reads; the same sequence followed by
 * a lone key yields exactly that key's answer at its byte.
 */
#include "../../ipc/pbx_ipc.h"
#include "../../peers/lib/pbx_peer_tty_keys.h"
#include "../runner/pbx_test.h"

#include <string.h>

/* Sequences a terminal (or a person's mouse) may send while a prompt
 * shows. None of them is an answer. */
static const char *const tk_seqs[] = {
    "\033[?2004;2$y",             /* DECRQM reply (the review's repro) */
    "\033[?1004;1$y",             /* DECRQM reply */
    "\033[2;1$y",                 /* ANSI DECRQM reply */
    "\033[MCY!",                  /* X10 mouse report, column 57: 'Y' */
    "\033[M y!",                  /* X10 mouse report carrying 'y' */
    "\033[M#yn",                  /* X10 release at y/n */
    "\033[M \303\231Y",           /* mode 1005: a UTF-8 coordinate, then 'Y' */
    "\033[M\302\200yn",           /* mode 1005 */
    "\033[<0;89;121M",            /* SGR mouse (1006) */
    "\033[<0;57;89m",             /* SGR mouse release */
    "\033[32;89;121M",            /* urxvt mouse (1015) */
    "\033[tyY",                   /* highlight tracking, CSI t x y */
    "\033[TyYnNyn",               /* highlight tracking, CSI T and six bytes */
    "\033[I",                     /* focus in (1004) */
    "\033[O",                     /* focus out */
    "\033[200~y\033[201~",        /* bracketed paste of "y" */
    "\033[200~n\033[Ay\033[201~", /* paste with an escape inside */
    "\033Oy",                     /* application keypad 9 (ESC =) */
    "\033On",                     /* application keypad '.' */
    "\033OA",                     /* application cursor key (?1) */
    "\033O5y",                    /* SS3 with a parameter */
    "\033y",                      /* Alt-y */
    "\033N",                      /* Alt-N */
    "\033\033[1;2y",              /* ESC ESC then a CSI */
    "\033(y",                     /* ESC with an intermediate (G0 'y') */
    "\033[121u",                  /* kitty keyboard: y */
    "\033[121;5u",                /* kitty keyboard: Ctrl-y */
    "\033[?1u",                   /* kitty keyboard flags reply */
    "\033[121;1:3u",              /* kitty keyboard: key release */
    "\033[27;5;121~",             /* modifyOtherKeys: Ctrl-y */
    "\033[?62;22c",               /* primary DA reply */
    "\033[>41;3;0c",              /* secondary DA reply */
    "\033[12;89R",                /* cursor position report */
    "\033]11;rgb:yyyy/nnnn/YYYY\033\\", /* OSC colour reply, ST */
    "\033]10;rgb:0/0/0y\007",           /* OSC reply, BEL */
    "\033]52;c;eQ==\007",               /* OSC 52 clipboard reply */
    "\033P1$r0;1my\033\\",              /* DECRQSS reply (DCS) */
    "\033P>|xterm(yes)\033\\",          /* XTVERSION reply */
    "\033_Gi=1;yes\033\\",              /* APC (kitty graphics reply) */
    "\033^yn\033\\",                    /* PM */
    "\033Xyn\033\\",                    /* SOS */
    "\233?2004;2$y",                    /* 8-bit CSI */
    "\302\233?2004;2$y",                /* UTF-8 encoded 8-bit CSI */
    "\217y",                            /* 8-bit SS3 */
    "\23511;yy\007",    /* 8-bit OSC (an octal escape has 3 digits) */
    "\302\220yy\033\\", /* UTF-8 encoded DCS */
};

#define TK_N (sizeof(tk_seqs) / sizeof(tk_seqs[0]))

/* Feeds s split at offset cut (two reads, the state carried over) and
 * returns the first answer, with its byte's index in *at. */
static uint8_t tk_run(const char *s, size_t cut, size_t *at)
{
    pbx_peer_tty_keys k;
    pbx_peer_tty_keys_reset(&k);
    size_t len = strlen(s);
    size_t used = 0;
    uint8_t a = pbx_peer_tty_keys_scan(&k, (const uint8_t *)s, cut, &used);
    if (a != 0U) {
        *at = used - 1U;
        return a;
    }
    a = pbx_peer_tty_keys_scan(&k, (const uint8_t *)s + cut, len - cut, &used);
    *at = cut + used - 1U;
    return a;
}

PBX_TEST(peers_tty_keys_no_sequence_yields_a_key)
{
    char buf[96];
    for (size_t i = 0; i < TK_N; i++) {
        size_t len = strlen(tk_seqs[i]);
        PBX_REQUIRE(len + 2U < sizeof(buf));
        for (size_t cut = 0; cut <= len; cut++) {
            size_t at = 0;
            if (tk_run(tk_seqs[i], cut, &at) != 0U) {
                pbx_test_failf(__FILE__, __LINE__, "sequence %zu", i);
            }
        }
        /* The same sequence then a lone key: exactly that key answers. */
        memcpy(buf, tk_seqs[i], len);
        buf[len] = 'n';
        buf[len + 1U] = '\0';
        for (size_t cut = 0; cut <= len + 1U; cut++) {
            size_t at = 0;
            uint8_t a = tk_run(buf, cut, &at);
            if (a != PBX_IPC_ANSWER_DENY || at != len) {
                pbx_test_failf(__FILE__, __LINE__, "sequence %zu", i);
            }
        }
    }
}

PBX_TEST(peers_tty_keys_two_sequences_back_to_back_yield_nothing)
{
    char buf[192];
    size_t ok = 0;
    for (size_t i = 0; i < TK_N; i++) {
        for (size_t j = 0; j < TK_N; j++) {
            size_t a = strlen(tk_seqs[i]);
            size_t b = strlen(tk_seqs[j]);
            if (a + b + 2U > sizeof(buf)) {
                pbx_test_failf(__FILE__, __LINE__, "too long: %zu, %zu", i, j);
                continue;
            }
            memcpy(buf, tk_seqs[i], a);
            memcpy(buf + a, tk_seqs[j], b);
            buf[a + b] = 'Y';
            buf[a + b + 1U] = '\0';
            size_t at = 0;
            uint8_t got = tk_run(buf, a, &at);
            if (got != PBX_IPC_ANSWER_APPROVE || at != a + b) {
                pbx_test_failf(__FILE__, __LINE__, "sequences %zu, %zu", i, j);
            } else {
                ok++;
            }
        }
    }
    PBX_CHECK_EQ(ok, TK_N * TK_N);
}

PBX_TEST(peers_tty_keys_lone_keys_answer)
{
    size_t at = 0;
    PBX_CHECK_EQ(tk_run("y", 0, &at), PBX_IPC_ANSWER_APPROVE);
    PBX_CHECK_EQ(tk_run("Y", 1, &at), PBX_IPC_ANSWER_APPROVE);
    PBX_CHECK_EQ(tk_run("n", 0, &at), PBX_IPC_ANSWER_DENY);
    PBX_CHECK_EQ(tk_run("N", 0, &at), PBX_IPC_ANSWER_DENY);
    PBX_CHECK_EQ(tk_run("abc \r\n", 2, &at), 0U);
    /* UTF-8 text before the key: a continuation byte 0x9B (in U+011B)
     * is never taken for an 8-bit CSI. */
    PBX_CHECK_EQ(tk_run("\304\233y", 1, &at), PBX_IPC_ANSWER_APPROVE);
    PBX_CHECK_EQ(at, 2U);
    PBX_CHECK_EQ(tk_run("\303\251n", 0, &at), PBX_IPC_ANSWER_DENY);
    /* CAN ends a sequence; ESC and a key leave an unended string, so a
     * person can always answer. */
    PBX_CHECK_EQ(tk_run("\033[12\030y", 3, &at), PBX_IPC_ANSWER_APPROVE);
    PBX_CHECK_EQ(tk_run("\033]0;never ended\033xy", 5, &at),
                 PBX_IPC_ANSWER_APPROVE);
    PBX_CHECK_EQ(at, 17U);
    /* A mouse report whose last coordinate is a UTF-8 lead byte that no
     * continuation follows (X10 at a column past 161): the key after it
     * still answers. */
    PBX_CHECK_EQ(tk_run("\033[M  \303y", 2, &at), PBX_IPC_ANSWER_APPROVE);
    PBX_CHECK_EQ(at, 6U);
}
