/* Internal UTF-8 helpers, the one implementation every module uses. */
#ifndef CT_CORE_UTF8_H
#define CT_CORE_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length (1 to 4) of the well-formed UTF-8 sequence at p (p < end), or 0
 * with *why set ("overlong encoding", "encoded surrogate ...", ...) for
 * anything Rust's str and Python would refuse. */
size_t ct__utf8_seq(const unsigned char *p, const unsigned char *end, const char **why);
/* The character at s[0..len): its length with *cp set, or 0 as above. */
size_t ct__utf8_decode(const unsigned char *s, size_t len, uint32_t *cp);
/* Encode cp (a valid scalar value) into out; returns 1 to 4. */
size_t ct__utf8_encode(uint32_t cp, char out[4]);
/* Bytes of s[0..len) before the first invalid sequence (len when all is
 * valid); *why (may be NULL) says what is wrong there. */
size_t ct__utf8_valid_prefix(const char *s, size_t len, const char **why);
/* Code points in valid UTF-8 s[0..len), and the byte offset of the
 * index-th (len when at or past the end: Python's slice clamping). */
size_t ct__utf8_count_chars(const char *s, size_t len);
size_t ct__utf8_char_to_byte(const char *s, size_t len, size_t index);

#endif
