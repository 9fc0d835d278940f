/* Internal: TensorBoard event files without TensorFlow — what Transformers'
 * TensorBoardCallback writes through PyTorch's SummaryWriter: one file per
 * writer, a file_version event, then one Summary event per logged scalar. */
#ifndef CT_TRAIN_TB_EVENTS_H
#define CT_TRAIN_TB_EVENTS_H

#include <stdint.h>

#include "core/error.h"

typedef struct ct__tb_writer ct__tb_writer;

/* Create logdir (and its parents) and a new file in it named as
 * TensorBoard's EventFileWriter names one,
 * events.out.tfevents.<10-digit unix time>.<hostname>.<pid>.<n> (n counts
 * the writers this process opened), holding its first event
 * {wall_time, file_version: "brain.Event:2"}. Errors name the folder or
 * file (CT_ERR_IO). */
ct_status ct__tb_open(const char *logdir, ct__tb_writer **out) CT__MUST_USE;

/* Append Event{wall_time, step, Summary{Value{tag, simple_value}}} as one
 * record, handed to the kernel before returning (a crash of the process
 * loses nothing already written). The value is stored as float32, as
 * SummaryWriter.add_scalar does. A failed write is cut back off the file
 * (so it stays readable) and the error names the file; the writer then
 * refuses further records with the same error. */
ct_status ct__tb_add_scalar(ct__tb_writer *w, const char *tag, double value, int64_t step,
                            double wall_time) CT__MUST_USE;

/* A Trainer log key as TensorBoardCallback tags it (Transformers'
 * rewrite_logs): "eval_loss" -> "eval/loss", "test_x" -> "test/x", any
 * other "k" -> "train/k". The wall time is now. */
ct_status ct__tb_add_log_value(ct__tb_writer *w, const char *key, double value,
                               int64_t step) CT__MUST_USE;

/* The file's path. */
const char *ct__tb_path(const ct__tb_writer *w);

/* Seconds since the Unix epoch, as Python's time.time(). */
double ct__tb_wall_time(void);

/* Close the file (NULL is fine). */
void ct__tb_close(ct__tb_writer *w);

#endif
