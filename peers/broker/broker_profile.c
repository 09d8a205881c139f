/*
 * broker_profile.c: the job's profile file (pbx run --sandbox --profile
 * FILE) as its broker sees it. launchd builds the job's Landlock rules
 * from the system profile changed by the file; the broker lets an open of
 * any path the changed profile names go on as the program's own call, as
 * it does for the system profile's paths, so that a directory the user
 * added with "+r DIR" is read as the rules say rather than refused as
 * "outside the scope". Landlock still decides every continued open: a
 * path the file names but launchd refused, or a file changed between
 * launchd's read and this one, reaches nothing the rules do not allow.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "peers/broker/broker.h"
#include "peers/lib/pbx_peer_profile.h"

/* The profile the broker read; b->pl.profile borrows its paths. */
static pbx_peer_profile g_profile;

/* Reads file (a regular file of at most PBX_PEER_PROFILE_BYTES) into
 * text; the bytes read, or -1 after a line saying why. */
static ssize_t bp_read(const char *file, uint8_t *text, size_t cap)
{
    int fd = file[0] == '/' ? open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY) : -1;
    struct stat st;
    ssize_t got = -1;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        got = read(fd, text, cap);
    }
    int e = errno;
    if (fd >= 0) {
        (void)close(fd);
    }
    if (got < 0 || (size_t)got > PBX_PEER_PROFILE_BYTES) {
        pbx_broker_say("pbx-broker: profile %s: %s\n", file,
                       got >= 0         ? "too long"
                       : file[0] != '/' ? "not an absolute path"
                       : fd >= 0        ? "not a readable regular file"
                                        : strerror(e));
        return -1;
    }
    return got;
}

int pbx_broker_profile_load(pbx_broker *b, const char *file)
{
    static uint8_t text[PBX_PEER_PROFILE_BYTES + 1U];
    ssize_t got = bp_read(file, text, sizeof(text));
    if (got < 0) {
        return -1;
    }
    pbx_peer_profile_system(&g_profile);
    pbx_peer_profile_refusal why;
    if (pbx_peer_profile_apply(&g_profile, text, (size_t)got, NULL, 0U, &why) !=
        PBX_OK) {
        pbx_broker_say("pbx-broker: profile %s, line %u: %s\n", file,
                       (unsigned)why.line, why.why);
        return -1;
    }
    /* Checked first, then added: either every path is added or none. */
    size_t room = PBX_PEER_BROKER_PROFILE_MAX - b->pl.nprofile;
    if (g_profile.n > room) {
        pbx_broker_say("pbx-broker: profile %s: %u paths, room for "
                       "%zu\n",
                       file, (unsigned)g_profile.n, room);
        return -1;
    }
    for (uint32_t i = 0; i < g_profile.n && i < PBX_PEER_PROFILE_ENTRIES; i++) {
        b->pl.profile[b->pl.nprofile++] = g_profile.entries[i].path;
    }
    return 0;
}
