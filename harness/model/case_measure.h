/* model/case_measure.h — how big a case is: its cost (for the minimiser and the store). */
#ifndef ATTNFUZZ_MODEL_CASE_MEASURE_H
#define ATTNFUZZ_MODEL_CASE_MEASURE_H

#include "model/case.h"

/* Work a case costs, for "keep the smaller reproducer": batch*heads*sq*skv*(dqk+dv)
 * plus small terms for every non-default feature. Smaller is simpler. */
double af_case_cost(const af_case *c);

#endif
