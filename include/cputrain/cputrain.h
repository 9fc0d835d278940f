/* libcputrain: train BERT-family models on CPUs with bf16 mixed precision.
 * The one header applications include. */
#ifndef CPUTRAIN_H
#define CPUTRAIN_H

#define CT_INSIDE_CPUTRAIN_H
#include "core.h"
#include "args.h"
#include "model.h"
#include "optim.h"
#include "dist.h"
#include "placement.h"
#include "tokenizer.h" /* before train.h, which names ct_tokenizer */
#include "train.h"
#include "table.h" /* before squad.h, which reads tables */
#include "squad.h"
#include "metrics.h"
#include "hub.h"
#include "qa.h"
#include "workflow.h"
#undef CT_INSIDE_CPUTRAIN_H

#endif /* CPUTRAIN_H */
