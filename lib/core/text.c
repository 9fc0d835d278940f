/* Values given as text. */
#include "core/text.h"

#include <strings.h>

int ct__parse_bool_text(const char *s, int *out)
{
    static const char *const yes[] = {"true", "yes", "t", "y", "1"};
    static const char *const no[] = {"false", "no", "f", "n", "0"};
    for (int i = 0; i < 5; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = 1;
            return 1;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = 0;
            return 1;
        }
    }
    return 0;
}

char *ct__printable(char *s)
{
    for (char *p = s; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    return s;
}
