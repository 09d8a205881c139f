/*
 * app_link.c: the program tests/install/check.sh builds against the
 * installed tree with `pkg-config --cflags --libs pbx-app` alone: it
 * includes the app library's header as an installed program does and
 * calls into it (pbx_app_open pulls in the call layer and the codecs of
 * libpbx.a), so a link line missing a library fails to link.
 */
#include "peers/app/pbx_app.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    char dir[256];
    if (pbx_app_dir(NULL, dir, sizeof(dir)) != PBX_APP_OK) {
        return 1;
    }
    /* Never taken (no test passes six arguments); linked all the same. */
    if (argc > 5) {
        pbx_app_request rq;
        pbx_app_grant g;
        memset(&rq, 0, sizeof(rq));
        (void)argv;
        return pbx_app_open(&rq, &g);
    }
    (void)printf("app_link: runtime directory %s\n", dir);
    return 0;
}
