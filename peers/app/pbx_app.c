/*
 * pbx_app.c: the app library (pbx_app.h): the runtime directory, and a
 * runtime-reply request over a job's launchd connection.
 */
#include "peers/app/pbx_app.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The value of environment variable name, or NULL when it is unset or
 * empty. */
static const char *pbx_app_env(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

int pbx_app_dir(const char *flag, char *out, size_t cap)
{
    const char *dir = flag != NULL && flag[0] != '\0' ? flag : NULL;
    const char *xdg = pbx_app_env("XDG_RUNTIME_DIR");
    int n = 0;
    if (dir == NULL) {
        dir = pbx_app_env("PBX_DIR");
    }
    if (dir != NULL) {
        n = snprintf(out, cap, "%s", dir);
    } else if (xdg != NULL) {
        n = snprintf(out, cap, "%s/%s", xdg, PBX_APP_DIR_NAME);
    } else {
        n = snprintf(out, cap, "/tmp/%s-%lu", PBX_APP_DIR_NAME,
                     (unsigned long)getuid());
    }
    if (n < 0 || (size_t)n >= cap) {
        if (cap > 0U) {
            out[0] = '\0';
        }
        return PBX_APP_E_PATH;
    }
    return PBX_APP_OK;
}

int pbx_app_dir_path(const char *flag, const char *name, char *out, size_t cap)
{
    int rc = pbx_app_dir(flag, out, cap);
    if (rc != PBX_APP_OK || name == NULL || name[0] == '\0') {
        return rc;
    }
    size_t used = 0;
    while (used < cap && out[used] != '\0') {
        used++;
    }
    int n = snprintf(out + used, cap - used, "/%s", name);
    if (n < 0 || (size_t)n >= cap - used) {
        out[0] = '\0';
        return PBX_APP_E_PATH;
    }
    return PBX_APP_OK;
}
