/*
 * pbx_peer_profile_file.h: the launcher's side of --profile FILE (pbx run
 * --sandbox, pbx-launchd run --sandbox): the file's absolute path for the
 * LAUNCH, and an early check of its format so that a mistake is reported
 * with its line on the terminal. launchd reads and checks the file again
 * itself (docs/HOST.md, "Profile files"): this check only helps.
 */
#ifndef PBX_PEER_PROFILE_FILE_H
#define PBX_PEER_PROFILE_FILE_H

#include "peers/lib/pbx_peer_launch.h"

/**
 * pbx_peer_profile_file_take resolves file (as given on the command line)
 * into abs[0..cap) (NUL-terminated), reads it and checks it against the
 * system profile and the stack directory stack (NULL: none known), then
 * sets req's profile flag and path (borrowing abs: abs must outlive req).
 * Returns true, or false after one line on stderr that starts with who
 * and names the file (and the line and why, for a refused one); req is
 * then unchanged.
 */
bool pbx_peer_profile_file_take(const char *who, const char *file,
                                const char *stack, char *abs, size_t cap,
                                pbx_peer_launch_req *req);

#endif /* PBX_PEER_PROFILE_FILE_H */
