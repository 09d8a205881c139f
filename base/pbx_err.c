/*
 * pbx_err.c: names and descriptions for the single project error enum.
 *
 * The tables are generated from the same .def files as the enum itself, so
 * a new error cannot exist without its text.
 */
#include "pbx_base.h"

/* One row per defined error; the table is searched linearly because it is
 * only used on error paths and in tools, never per event. */
struct pbx_err_row {
    pbx_err value;
    const char *name;
    const char *text;
};

#define PBX_ERR_DEF(name, value, text) {name, #name, text},
static const struct pbx_err_row pbx_err_rows[] = {
    {PBX_OK, "PBX_OK", "success"},
#include "err/base.def"
#include "err/bootstrap.def"
#include "err/capabi.def"
#include "err/core.def"
#include "err/ipc.def"
#include "err/runtime.def"
#include "err/sha2.def"
#include "err/tools.def"
};
#undef PBX_ERR_DEF

/* Finds the row for err, or returns NULL for a value no layer defines. */
static const struct pbx_err_row *pbx_err_find(pbx_err err)
{
    for (size_t i = 0; i < PBX_ARRAY_LEN(pbx_err_rows); i++) {
        if (pbx_err_rows[i].value == err) {
            return &pbx_err_rows[i];
        }
    }
    return NULL;
}

const char *pbx_err_text(pbx_err err)
{
    const struct pbx_err_row *row = pbx_err_find(err);
    return row != NULL ? row->text : "unknown error";
}

const char *pbx_err_name(pbx_err err)
{
    const struct pbx_err_row *row = pbx_err_find(err);
    return row != NULL ? row->name : "PBX_E_UNKNOWN";
}
