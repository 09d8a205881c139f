/*
 * pbx_core_judges.c: the one dispatch table of ended calls, as
 * pbx_core_public.c's dispatch is for public frames. An outstanding call
 * ends exactly once (reply, deadline, lost route) in pbx_core_calls.c,
 * which reaches the judge of the call's kind only through this table, so
 * the calls file names no responsibility module and no judge calls back
 * into a file that calls it. This file only maps kind to judge.
 */
#include "core/pbx_core_progress.h"

const pbx_core_judge_fn pbx_core_judges[PBX_CORE_CALL_KINDS] = {
    [PBX_CORE_CALL_RESOLVE] = pbx_core_judge_resolve,
    [PBX_CORE_CALL_POLICY] = pbx_core_judge_policy,
    [PBX_CORE_CALL_PROMPT] = pbx_core_judge_prompt,
    [PBX_CORE_CALL_INSTALL] = pbx_core_judge_install,
    [PBX_CORE_CALL_DETACH] = pbx_core_judge_detach,
    [PBX_CORE_CALL_ACTIVE] = pbx_core_judge_activate,
    [PBX_CORE_CALL_RELEASE_DETACH] = pbx_core_release_judge,
    [PBX_CORE_CALL_REQ_RETIRE] = pbx_core_release_judge,
    [PBX_CORE_CALL_WITHDRAW] = pbx_core_release_judge,
    [PBX_CORE_CALL_REMOVE] = pbx_core_judge_grant,
    [PBX_CORE_CALL_RETIRE] = pbx_core_judge_grant,
    [PBX_CORE_CALL_RESYNC] = pbx_core_resync_judge,
};
