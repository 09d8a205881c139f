/*
 * pbx_digest.c: `pbx digest SELECTOR...|-`, the SHA-256 of a selector as
 * a program commits it.
 *
 * A grant row, a prompt and powerboxd's COMMIT check all carry the
 * selector's SHA-256, never trusting the selector text alone. An operator
 * who wants to know which grant row names a given file computes the same
 * digest here and compares: this prints exactly the 32 bytes the core
 * checks (SHA-256 over the selector's bytes, no terminator), in lower-case
 * hex, followed by two spaces and the selector as given.
 */
#include "core/pbx_core.h"
#include "sha2/pbx_sha2.h"
#include "tools/pbx/pbx_tool.h"

#include <stdio.h>
#include <string.h>

/* Prints the digest line of len selector bytes, shown as name. */
static int pbx_digest_one(const uint8_t *sel, size_t len, const char *name)
{
    if (len == 0U || len > PBX_CORE_SELECTOR_BYTES_MAX) {
        /* At most 40 bytes of the name: the line stays one line. */
        (void)fprintf(stderr,
                      "pbx digest: selector '%.40s%s' is %zu bytes; a "
                      "selector is 1 to %u bytes\n",
                      name, strlen(name) > 40U ? "..." : "", len,
                      (unsigned)PBX_CORE_SELECTOR_BYTES_MAX);
        return PBX_TOOL_EXIT_FAIL;
    }
    uint8_t d[PBX_SHA2_DIGEST_BYTES];
    if (pbx_sha2_digest(sel, len, d) != PBX_OK) {
        (void)fprintf(stderr, "pbx digest: cannot digest '%s'\n", name);
        return PBX_TOOL_EXIT_FAIL;
    }
    for (size_t i = 0; i < sizeof(d); i++) {
        (void)printf("%02x", (unsigned)d[i]);
    }
    (void)printf("  %s\n", name);
    return PBX_TOOL_EXIT_OK;
}

/* Digests standard input whole (one selector, at most the maximum). */
static int pbx_digest_stdin(void)
{
    static uint8_t buf[PBX_CORE_SELECTOR_BYTES_MAX + 1U];
    size_t n = fread(buf, 1, sizeof(buf), stdin);
    if (ferror(stdin) != 0) {
        (void)fputs("pbx digest: cannot read standard input\n", stderr);
        return PBX_TOOL_EXIT_FAIL;
    }
    return pbx_digest_one(buf, n, "-");
}

void pbx_tool_digest_usage(FILE *fp)
{
    (void)fputs("  pbx digest SELECTOR...|-\n"
                "    the SHA-256 of each selector as a program commits it "
                "(the digest\n"
                "    grant rows and prompts carry), in hex; '-' reads one "
                "selector\n"
                "    from standard input (its bytes exactly)\n",
                fp);
}

int pbx_tool_digest(int argc, char **argv)
{
    if (argc < 2) {
        return pbx_tool_usage_error("digest", "missing selector", NULL);
    }
    int worst = PBX_TOOL_EXIT_OK;
    for (int i = 1; i < argc; i++) {
        int rc = strcmp(argv[i], "-") == 0
                     ? pbx_digest_stdin()
                     : pbx_digest_one((const uint8_t *)argv[i], strlen(argv[i]),
                                      argv[i]);
        if (rc != PBX_TOOL_EXIT_OK) {
            worst = rc;
        }
    }
    return worst;
}
