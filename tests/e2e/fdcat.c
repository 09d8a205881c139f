/*
 * fdcat.c: pbx-test-fdcat, the program of the e2e scenario pbx-run-grant
 * (tests/e2e/run.py). Statically linked, so it also runs sandboxed.
 *
 *   pbx-test-fdcat [--again] FD
 *
 * Reads the whole file behind the object at descriptor FD (a grant's,
 * put there by pbx-stage) through pbx_obj_read and writes exactly its
 * bytes to standard output. With --again it then waits for one line on
 * standard input (the scenario ends the grant meanwhile) and reads again
 * from offset 0: it says "read again: ok" or "read again: <why>" on
 * standard error and exits 0 or 3. A failed first read exits 1.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "peers/app/pbx_obj.h"
#include "peers/lib/pbx_peer.h"

/* The largest file read (the scenario's is small). */
#define FDCAT_MAX 65536U

/* Reads everything behind obj into buf[0..FDCAT_MAX); returns the status
 * and the length in *n. */
static int fdcat_read(int obj, char *buf, size_t *n)
{
    *n = 0;
    for (unsigned k = 0; k < FDCAT_MAX / 4096U; k++) {
        size_t got = 0;
        int st = pbx_obj_read(obj, *n, buf + *n, 4096U, &got);
        *n += got;
        if (st != 0 || got == 0U) {
            return st;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    static char buf[FDCAT_MAX];
    bool again = argc == 3 && strcmp(argv[1], "--again") == 0;
    uint64_t fd = 0;
    if ((argc != 2 && !again) ||
        !pbx_peer_parse_u64(argv[argc - 1], 1023U, &fd)) {
        (void)fputs("usage: pbx-test-fdcat [--again] FD\n", stderr);
        return 2;
    }
    size_t n = 0;
    int st = fdcat_read((int)fd, buf, &n);
    if (st != 0) {
        (void)fprintf(stderr, "pbx-test-fdcat: read fd %llu: %s\n",
                      (unsigned long long)fd, pbx_obj_strerror(st));
        return 1;
    }
    (void)fwrite(buf, 1, n, stdout);
    (void)fflush(stdout);
    if (!again) {
        return 0;
    }
    char line[64];
    (void)fgets(line, sizeof(line), stdin);
    st = fdcat_read((int)fd, buf, &n);
    (void)fprintf(stderr, "pbx-test-fdcat: read again: %s\n",
                  st == 0 ? "ok" : pbx_obj_strerror(st));
    return st == 0 ? 0 : 3;
}
