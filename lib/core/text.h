/* Internal: values given as text (arguments, options, environment). */
#ifndef CT_CORE_TEXT_H
#define CT_CORE_TEXT_H

/* Python's and argparse's truthy and falsy words, any case: true/yes/t/y/1
 * -> *out 1, false/no/f/n/0 -> *out 0, returning 1; anything else 0. */
int ct__parse_bool_text(const char *s, int *out);

#endif
