/* result: what a test writes into its result besides metrics (test.h): the
 * sentence of a failure (rtg_fail) and a verdict (rtg_verdict). */
#include <stdarg.h>
#include <stdio.h>

#include "test.h"

int rtg_fail(rtg_result *res, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->error, sizeof res->error, fmt, ap);
    va_end(ap);
    return status;
}

void rtg_verdict(rtg_result *res, const char *name, bool pass, const char *fmt, ...)
{
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    rtg_json *v = rtg_j_obj();
    rtg_j_set(v, "pass", rtg_j_bool(pass));
    rtg_j_set(v, "detail", rtg_j_str(detail));
    rtg_j_set(res->verdicts, name, v);
}
