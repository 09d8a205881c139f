/*
 * pbx_app.h: the library a program links to ask powerboxd for an object
 * from inside a launchd job (docs/HOST.md). Hosted code: libc and POSIX.
 * Built as $(BUILD)/lib/libpbx-app.a, which also holds the peer library
 * it uses; a program links it before libpbx.a.
 */
#ifndef PBX_APP_H
#define PBX_APP_H

#include <stddef.h>

/** PBX_APP_DIR_NAME is the runtime directory's name under
 * $XDG_RUNTIME_DIR, and its prefix under /tmp (followed by -UID). */
#define PBX_APP_DIR_NAME "powerboxd"

/** pbx_app status: 0 on success, else one of these (pbx_app_strerror
 * names each). They are the library's own numbers, never an errno. */
enum {
    /** PBX_APP_OK: success. */
    PBX_APP_OK = 0,
    /** PBX_APP_E_PATH: a runtime path does not fit its buffer. */
    PBX_APP_E_PATH = 1
};

/**
 * pbx_app_dir writes the runtime directory of the stack into out[0..cap)
 * (NUL-terminated): flag when it is non-NULL and non-empty (a --dir
 * option), else $PBX_DIR, else $XDG_RUNTIME_DIR/powerboxd, else
 * /tmp/powerboxd-UID with the real user id; an empty variable counts as
 * unset. flag is only read. Returns PBX_APP_OK, or PBX_APP_E_PATH (out
 * holds "") when the path needs cap bytes or more.
 */
int pbx_app_dir(const char *flag, char *out, size_t cap);

/**
 * pbx_app_dir_path writes the path of name inside the runtime directory
 * pbx_app_dir resolves from flag into out[0..cap); name NULL or "" gives
 * the directory itself. Returns PBX_APP_OK or PBX_APP_E_PATH (out "").
 */
int pbx_app_dir_path(const char *flag, const char *name, char *out, size_t cap);

#endif /* PBX_APP_H */
