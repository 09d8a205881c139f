/*
 * pbx_peer_profile_file.c: --profile FILE on the launcher's side (see
 * pbx_peer_profile_file.h).
 */
#define _GNU_SOURCE
#include "peers/common/pbx_peer_profile_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "peers/lib/pbx_peer_profile.h"

/* Reads the regular file at path into text (at most cap bytes, one more
 * is read to see a larger file); the count, or -1 with errno set. */
static ssize_t profile_file_read(const char *path, uint8_t *text, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    struct stat st;
    ssize_t got = -1;
    if (fd >= 0 && fstat(fd, &st) == 0) {
        if (S_ISREG(st.st_mode)) {
            got = read(fd, text, cap);
        } else {
            errno = EINVAL;
        }
    }
    int e = errno;
    if (fd >= 0) {
        (void)close(fd);
    }
    errno = e;
    return got;
}

bool pbx_peer_profile_file_take(const char *who, const char *file,
                                const char *stack, char *abs, size_t cap,
                                pbx_peer_launch_req *req)
{
    static uint8_t text[PBX_PEER_PROFILE_BYTES + 1U];
    static char real[PATH_MAX];
    static char stack_real[PATH_MAX];
    static pbx_peer_profile prof;
    if (realpath(file, real) == NULL || strlen(real) >= cap ||
        strlen(real) > PBX_PEER_LAUNCH_PROFILE_MAX) {
        (void)fprintf(stderr, "%s: profile %s: %s\n", who, file,
                      strerror(errno));
        return false;
    }
    ssize_t got = profile_file_read(real, text, sizeof(text));
    if (got < 0) {
        (void)fprintf(stderr, "%s: profile %s: %s\n", who, file,
                      errno == EINVAL ? "not a regular file" : strerror(errno));
        return false;
    }
    const char *forbid[1] = {stack_real};
    size_t nforbid =
        stack != NULL && realpath(stack, stack_real) != NULL ? 1U : 0U;
    pbx_peer_profile_refusal why;
    pbx_peer_profile_system(&prof);
    if (pbx_peer_profile_apply(&prof, text, (size_t)got, forbid, nforbid,
                               &why) != PBX_OK) {
        (void)fprintf(stderr, "%s: profile %s, line %u: %s\n", who, file,
                      (unsigned)why.line, why.why);
        return false;
    }
    memcpy(abs, real, strlen(real) + 1U);
    req->flags |= PBX_PEER_LAUNCH_PROFILE;
    req->profile = (const uint8_t *)abs;
    req->profile_len = (uint16_t)strlen(abs);
    return true;
}
