/* SPDX-License-Identifier: MIT */
/* Scenarios of gen-trace for the picture-like formats and `leakwatch diff`. */
#ifndef LW_GEN_FORMATS_H
#define LW_GEN_FORMATS_H

#include "trace-builder.h"

void scenario_formats(struct out *o);
void scenario_formats_fixed(struct out *o);
void scenario_formats_worse(struct out *o);
void scenario_formats_rank0(struct out *o);
void scenario_formats_rank1(struct out *o);
void scenario_formats_rank2(struct out *o);

#endif
