/* The exec backend's outcome: how its program ended and what it printed, turned into the call's
 * result (docs/backends.md, the exec backend). No I/O. */
#ifndef OSBQ_WORKER_EXEC_RESULT_H
#define OSBQ_WORKER_EXEC_RESULT_H

#include <stdint.h>

#include "backend.h"
#include "exec_output.h"
#include "exec_watch.h"

/* Fills call's result from how the program ended (end: not cancelled) and what it printed
 * (output): its timeout (timeout_ms) passed, its status lost, a signal, a failing exit status
 * (described by the tail of its stderr), or a result line that is too long, not JSON, in
 * progress (backend_call_wait_for) or a success with the kind's fields (a bind's binding, a
 * provision's or update's dashboard_url and metadata), each checked. A failure the program's
 * result line qualifies says whether the instance is still usable. */
void exec_result_report(struct backend_call *call, const struct exec_watch_end *end,
                        const struct exec_output *output, int64_t timeout_ms);

#endif
