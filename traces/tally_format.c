#include "internal.h"
int tl_tally_from_buffer(tl_trace *t, const char *path, const char *buf, size_t len,
                         const tl_trace_options *opts, tl_err *err)
{ (void)t;(void)buf;(void)len;(void)opts; return tl_errf(err, TL_EINVAL, "%s: todo", path); }
int tl_trace_write_json(const tl_trace *t, const char *path, tl_err *err)
{ (void)t; return tl_errf(err, TL_EINVAL, "%s: todo", path); }
