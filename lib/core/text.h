/* Internal: values given as text (arguments, options, environment). */
#ifndef CT_CORE_TEXT_H
#define CT_CORE_TEXT_H

/* Python's and argparse's truthy and falsy words, any case: true/yes/t/y/1
 * -> *out 1, false/no/f/n/0 -> *out 0, returning 1; anything else 0. */
int ct__parse_bool_text(const char *s, int *out);

/* Text from a peer or a server made fit for error messages and logs, in
 * place: control bytes (a terminal's escape sequences start with one) and
 * DEL become '?'. Returns s. */
char *ct__printable(char *s);

#endif
